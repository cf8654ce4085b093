"""List notebook cells that nbdev's docs build would run out of context.

nbdev's doc processing (`proc_nbs`, used by nbdev-docs and tools/build_docs.py) executes every non-exported code cell
that contains an import anywhere, alone with the exported cells. A cell that mixes an import with code needing earlier
cells then fails the docs build. Usage: python tools/check_nbs.py [nbs/*.ipynb]; exits 1 when it finds any."""
import ast, json, sys
from pathlib import Path

def offenders(path):
    for i,c in enumerate(json.loads(Path(path).read_text())['cells']):
        if c['cell_type']!='code': continue
        src = ''.join(c['source'])
        if any(l.startswith('#|') and l.split()[1:2] and l.split()[1] in ('export','exports','exporti') for l in src.splitlines()): continue
        try: tree = ast.parse(src)
        except SyntaxError: continue
        imp = (ast.Import, ast.ImportFrom)
        if not any(isinstance(n, imp) for n in ast.walk(tree)): continue
        if all(isinstance(n, imp) for n in tree.body): continue
        yield i, src

if __name__=='__main__':
    files = sys.argv[1:] or sorted(Path('nbs').glob('*.ipynb'))
    bad = [(f,i,s) for f in files for i,s in offenders(f)]
    for f,i,s in bad: print(f"{f} cell {i}:\n  " + '\n  '.join(s.splitlines()[:6]) + '\n')
    sys.exit(1 if bad else 0)
