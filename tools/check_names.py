"""Check that every module defines what its functions and classes read: each global name read inside a function, lambda,
comprehension or class body must exist in the module's namespace once the module is imported, or be a builtin.

    python tools/check_names.py                      # every fastperf/*.py module (the installed package)
    python tools/check_names.py path/to/mod.py ...   # given module files (imported from their path)

Why: nbdev notebooks test cells in the notebook's namespace, where names imported by other cells (or star imports)
are defined; the exported module may lack them and raise NameError only when a user calls the function. Star imports
also hide undefined names from pyflakes/ruff. Here each module is imported (this script is a fresh interpreter) and
Python's own scope analysis (`symtable`) gives, per scope, the names it reads that resolve to module globals; each one
missing from the imported module is reported with its line. A line ending in `# check_names: ignore` is not reported.
Exits 1 if anything is missing, printing `path:line: name 'x' is not defined (in function f)`."""
import ast, builtins, importlib, importlib.util, symtable, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _scopes(tab):
    "Every child scope of a symtable, depth first (functions, lambdas, comprehensions, classes)"
    for c in tab.get_children():
        yield c
        yield from _scopes(c)

def _load_lines(tree):
    "name -> sorted line numbers where it is read"
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load): out.setdefault(n.id, []).append(n.lineno)
    return {k:sorted(v) for k,v in out.items()}

def _ends(tree):
    "(kind, name, first line) of a def/class/lambda -> last line, to place a name inside its scope"
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            first = min([n.lineno]+[d.lineno for d in getattr(n, 'decorator_list', [])])
            out.setdefault(n.lineno, n.end_lineno); out.setdefault(first, n.end_lineno)
    return out

def undefined_names(src:str, namespace, filename:str='<module>')->list:
    "[(line, name, scope)] of global names read in functions/classes of `src` that neither `namespace` nor builtins define"
    tree = ast.parse(src, filename)
    tab = symtable.symtable(src, filename, 'exec')
    lines,ends,srclines = _load_lines(tree),_ends(tree),src.splitlines()
    known = set(namespace)|set(dir(builtins))
    # a name some function declares `global` and assigns is bound at run time, once that function ran
    late = {sym.get_name() for sc in _scopes(tab) for sym in sc.get_symbols() if sym.is_declared_global() and sym.is_assigned()}
    res = set()
    for sc in _scopes(tab):
        start = sc.get_lineno()
        end = ends.get(start, start) if sc.get_type()!='module' else len(srclines)
        for sym in sc.get_symbols():
            name = sym.get_name()
            # read here and bound in no enclosing function: a module global (`is_global()` also says True for some locals on 3.11)
            glob = sym.is_declared_global() or not (sym.is_local() or sym.is_free() or sym.is_parameter() or sym.is_nonlocal())
            if not sym.is_referenced() or not glob or name in known: continue
            if name in late: continue
            at = [l for l in lines.get(name, []) if start<=l<=end] or [start]
            l = at[0]
            if l<=len(srclines) and srclines[l-1].rstrip().endswith('# check_names: ignore'): continue
            res.add((l, name, sc.get_name()))
    return sorted(res)

def _import(path:Path):
    "Import the module at `path`: as `fastperf.x` if it is in this package (so relative imports work), else from its file"
    path = path.resolve()
    pkg = ROOT/'fastperf'
    if path.is_relative_to(pkg): return importlib.import_module('.'.join(('fastperf',)+path.relative_to(pkg).with_suffix('').parts))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod

def check(paths)->list:
    "Lines `path:line: name 'x' is not defined (in scope)` for every module in `paths`"
    out = []
    for p in map(Path, paths):
        try: mod = _import(p)
        except Exception as e:
            out.append(f"{p}:0: importing the module failed: {type(e).__name__}: {e}"); continue
        for line,name,scope in undefined_names(p.read_text(), vars(mod), str(p)):
            out.append(f"{p}:{line}: name '{name}' is not defined (in {scope})")
    return out

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    paths = argv or sorted(p for p in (ROOT/'fastperf').rglob('*.py') if p.name not in ('_modidx.py', '__init__.py') and '__pycache__' not in p.parts)
    errs = check(paths)
    for e in errs: print(e)
    print(f"check_names: {len(paths)} module(s), {len(errs)} undefined name(s)")
    return 1 if errs else 0

if __name__=='__main__': sys.exit(main())
