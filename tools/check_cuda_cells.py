"""Check the notebook cells that no CPU run executes (`#| cuda`, and `#| slow` unless asked): every name they read
must exist where they stand, and every `torch.`/module attribute chain they use must resolve.

    python tools/check_cuda_cells.py                   # every notebook with such cells
    python tools/check_cuda_cells.py nbs/09_timer.ipynb

Each notebook's other cells run as `nbdev-test` runs them (same skipping, in one IPython shell, from nbs/); at each
skipped cell its free names are looked up in the shell's namespace (names the skipped cells before it define count
as defined). It cannot see wrong arguments or wrong values: only a GPU run checks those. Exits 1 if anything is missing."""
import ast, builtins, os, sys, types
from pathlib import Path
from fastcore.nbio import read_nb
from execnb.shell import CaptureShell

SKIP = {'cuda', 'slow'}

def _flags(src): return {w for l in src.splitlines() if l.startswith('#|') for w in l[2:].split()}

def _bound(tree):
    "Every name the code binds anywhere (scope-blind on purpose: a name bound in the cell is not reported)"
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)): names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): names.add(n.name)
        elif isinstance(n, ast.arg): names.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)): names |= {(a.asname or a.name).split('.')[0] for a in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name: names.add(n.name)
    return names

def _chains(tree):
    "Attribute chains rooted at a name, as tuples: `torch.cuda.Event` -> ('torch', 'cuda', 'Event')"
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and not isinstance(getattr(n, '_parent', None), ast.Attribute):
            parts, x = [], n
            while isinstance(x, ast.Attribute): parts.append(x.attr); x = x.value
            if isinstance(x, ast.Name): out.append((x.id, *reversed(parts)))
    return out

def _mark_parents(tree):
    for p in ast.walk(tree):
        for c in ast.iter_child_nodes(p): c._parent = p

def check_chain(root, chain):
    "The first attribute of `chain` that does not exist, following it only through modules and classes (None if fine)"
    obj = root
    for i,a in enumerate(chain):
        if not isinstance(obj, (types.ModuleType, type)): return None  # an instance: its attributes are runtime matters
        if not hasattr(obj, a): return '.'.join(chain[:i+1])
        obj = getattr(obj, a)
    return None

def problems(src, ns, virtual):
    "What `src` reads that `ns` (plus `virtual` names) lacks"
    tree = ast.parse(src)
    _mark_parents(tree)
    bound = _bound(tree)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    out = [f"undefined name {x!r}" for x in sorted(loaded-bound-virtual) if x not in ns and not hasattr(builtins, x)]
    for root,*chain in _chains(tree):
        if root in bound or root in virtual or root not in ns: continue
        bad = check_chain(ns[root], chain)
        if bad: out.append(f"no attribute {root}.{bad}")
    return out, bound

def check_nb(path, skip=SKIP):
    nb = read_nb(path)
    shell = CaptureShell(path=Path(path).parent)
    os.environ['IN_TEST'] = '1'
    virtual, report = set(), []
    cwd = os.getcwd()
    os.chdir(Path(path).parent)
    try:
        for i,c in enumerate(nb.cells):
            if c.cell_type!='code': continue
            src = c.source
            code = '\n'.join(l for l in src.splitlines() if not l.lstrip().startswith(('%', '!')))
            if _flags(src) & skip:
                found, bound = problems(code, shell.user_ns, virtual)
                virtual |= bound
                report += [f"{Path(path).name} cell {i}: {p}" for p in found]
            elif not _flags(src) & {'eval:', 'skip_exec'}:
                shell.run(src)
                if shell.exc: raise RuntimeError(f"{path} cell {i} failed: {shell.exc!r}")
    finally: os.chdir(cwd)
    return report

if __name__=='__main__':
    paths = sys.argv[1:] or [str(p) for p in sorted(Path('nbs').glob('*.ipynb'))
                              if any(_flags(c.source) & SKIP for c in read_nb(p).cells if c.cell_type=='code')]
    bad = []
    for p in paths:
        r = check_nb(p); bad += r
        print(f"{p}: {'ok' if not r else str(len(r))+' problem(s)'}", flush=True)
    for b in bad: print(b)
    sys.exit(1 if bad else 0)
