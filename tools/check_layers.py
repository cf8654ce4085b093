"""Check how fastperf's modules depend on each other: no module imports a private name of another fastperf module, the
import graph has no circle, and what users run never imports the measuring modules.

    python tools/check_layers.py                 # the package in fastperf/
    python tools/check_layers.py path/to/pkg     # another package folder (the tests plant faults in a copy)

Every import counts, at module level or inside a function (an import inside a function is still a dependency: it only
hides a circle until the function runs). Read from the source with `ast`, nothing is imported. Checks:
  - private names: `from fastperf.x import _y` / `from .x import _y`, and `fastperf.x._y` read as an attribute;
  - circles: a cycle in the graph module -> fastperf modules it imports (`fastperf.all` and `fastperf.cli`, which only
    gather and dispatch, are left out of the graph);
  - layers: the runtime modules (everything outside `fastperf.measure`, and `fastperf.measure.clock`, the one clock, runner and
    statistic that the tuner times its candidates with) import nothing else of `fastperf.measure` (benchmarks, reference loops);
  - notebook order: no module imports a module whose notebook comes later in `nbs/` (read from the `File to edit:` line
    nbdev-export writes at the top of each module), so the notebooks read, and run, front to back.
Exits 1 with one line per finding; prints `check_layers: N modules, 0 findings` when there is none."""
import ast, re, sys
from pathlib import Path

SHARED = {'measure.clock'} # the one clock, runner and statistic: the tuner (runtime) times its candidates with it
GATHERING = {'all', 'cli'} # gather names / dispatch entry points: left out of the graph

def measuring(m:str)->bool: return m.startswith('measure.') and m not in SHARED

def _modules(pkg_dir:Path)->dict:
    "Dotted module name (relative to the package) -> file, for every module of the package and its subpackages"
    res = {}
    for p in sorted(pkg_dir.rglob('*.py')):
        if '__pycache__' in p.parts or p.stem=='_modidx': continue
        parts = list(p.relative_to(pkg_dir).with_suffix('').parts)
        if parts[-1]=='__init__': parts = parts[:-1]
        if parts: res['.'.join(parts)] = p
    return res

def _resolve(mods:dict, here:str, is_pkg:bool, level:int, module:str|None, pkg:str)->str|None:
    "The package module an import refers to ('' for the package itself), or None for another package"
    if level:
        base = here.split('.') if here else []
        base = base if is_pkg else base[:-1]
        base = base[:len(base)-(level-1)] if level>1 else base
        return '.'.join(base+([module] if module else []))
    if module==pkg: return ''
    if module and module.startswith(pkg+'.'): return module[len(pkg)+1:]
    return None

def _owner(mods:dict, name:str)->str|None:
    "The longest module name that `name` (dotted) starts with"
    while name:
        if name in mods: return name
        name = name.rpartition('.')[0]
    return None

def scan(pkg_dir):
    "(modules, graph: module -> {(imported module, line)}, findings: [str])"
    pkg_dir = Path(pkg_dir); pkg = pkg_dir.name
    mods = _modules(pkg_dir)
    graph,findings = {m:set() for m in mods},[]
    for m,p in mods.items():
        tree = ast.parse(p.read_text(), str(p))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = _resolve(mods, m, p.stem=='__init__', node.level, node.module, pkg)
                if mod is None: continue
                for a in node.names:
                    sub = f"{mod}.{a.name}" if mod else a.name
                    if sub in mods: graph[m].add((sub, node.lineno)); continue # `from fastperf.measure import clock`
                    own = _owner(mods, mod)
                    if own: graph[m].add((own, node.lineno))
                    if a.name.startswith('_') and own and own!=m:
                        findings.append(f"{p}:{node.lineno}: private name {a.name!r} imported from {pkg}.{mod}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith(pkg+'.'):
                        own = _owner(mods, a.name[len(pkg)+1:])
                        if own: graph[m].add((own, node.lineno))
            elif isinstance(node, ast.Attribute) and node.attr.startswith('_') and not node.attr.startswith('__'):
                chain,v = [],node.value # fastperf.x.y._z
                while isinstance(v, ast.Attribute): chain.insert(0, v.attr); v = v.value
                if isinstance(v, ast.Name) and v.id==pkg and chain:
                    own = _owner(mods, '.'.join(chain))
                    if own and own!=m: findings.append(f"{p}:{node.lineno}: private name {node.attr!r} read from {pkg}.{'.'.join(chain)}")
    return mods,graph,findings

def cycles(graph:dict)->list:
    "Each circle of the graph once, as a list of modules (Tarjan's strongly connected components of size > 1, and self-loops)"
    idx,low,stack,on,res,n = {},{},[],set(),[],[0]
    def visit(v):
        idx[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w,_ in graph.get(v, ()):
            if w not in graph: continue
            if w not in idx: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v]==idx[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w==v: break
            if len(comp)>1: res.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in idx: visit(v)
    return res

def check(pkg_dir)->list:
    mods,graph,findings = scan(pkg_dir)
    g = {m:{(w,l) for w,l in e if w not in GATHERING and w!=m and w!=''} for m,e in graph.items() if m not in GATHERING and m!=''}
    for c in cycles(g):
        edges = [f"{a} -> {b} (line {l})" for a in c for b,l in sorted(g[a]) if b in c]
        findings.append(f"import circle among {', '.join(c)}: " + '; '.join(edges))
    for m,e in sorted(g.items()):
        if measuring(m): continue
        for w,l in sorted(e):
            if measuring(w): findings.append(f"{mods[m]}:{l}: runtime module {m} imports the measuring module {w}")
    nb = {m:_notebook(p) for m,p in mods.items()}
    for m,e in sorted(g.items()):
        for w,l in sorted(e):
            if nb.get(m) and nb.get(w) and nb[w]>nb[m]: findings.append(f"{mods[m]}:{l}: {m} ({nb[m]}) imports {w}, whose notebook {nb[w]} comes later")
    return findings

def _notebook(p:Path)->str|None:
    "The notebook nbdev-export generated module `p` from, if it says"
    m = re.search(r'File to edit: \.\./(?:\.\./)*nbs/(\S+?\.ipynb)', p.read_text()[:2000])
    return m and m.group(1)

if __name__=='__main__':
    pkg_dir = Path(sys.argv[1]) if len(sys.argv)>1 else Path(__file__).resolve().parents[1]/'fastperf'
    findings = check(pkg_dir)
    for f in findings: print(f)
    print(f"check_layers: {len([m for m in _modules(pkg_dir) if m])} modules, {len(findings)} finding(s)")
    sys.exit(1 if findings else 0)
