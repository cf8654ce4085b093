"""Authoring aid: convert between a percent-format script and a notebook (nbs/*.ipynb stay the source).

    python tools/nbpy.py topy nbs/02_cast.ipynb /tmp/02_cast.py   # edit as text ...
    python tools/nbpy.py tonb /tmp/02_cast.py nbs/02_cast.ipynb   # ... and write it back (outputs are kept
                                                                   #     for cells whose source did not change)
Cells are separated by `# %%` (code) or `# %% [markdown]` (markdown; each line starts with `# `)."""
import json, sys, re, hashlib
from pathlib import Path

def _md_lines(lines): return [l[2:] if l.startswith('# ') else l.lstrip('#') for l in lines]

def py2cells(text):
    cells, cur, kind = [], [], None
    def flush():
        if kind is None: return
        src = cur[:]
        while src and not src[-1].strip(): src.pop()
        if kind=='markdown': src = _md_lines(src)
        cells.append(dict(cell_type=kind, source='\n'.join(src)))
    for line in text.splitlines():
        m = re.match(r'^# %%( \[markdown\])?\s*$', line)
        if m: flush(); cur, kind = [], ('markdown' if m.group(1) else 'code'); continue
        if kind is None: continue
        cur.append(line)
    flush()
    return cells

_keep_dirs = ('hide',)  # directives an import cell split from a cell keeps

def split_imports(src):
    """nbdev's docs build executes every non-exported cell that contains an import, alone. So a cell mixing imports with
    code that needs earlier cells breaks the docs: return its top-level imports as a cell of their own, then the rest."""
    import ast
    lines = src.splitlines()
    dirs = [l for l in lines if l.startswith('#|')]
    if any(d.split()[1:2] and d.split()[1] in ('export','exports','exporti') for d in dirs): return [src]
    try: tree = ast.parse(src)
    except SyntaxError: return [src]
    imps = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not imps or len(imps)==len(tree.body): return [src]
    imp_lines = set(i for n in imps for i in range(n.lineno-1, n.end_lineno))
    head = [l for l in dirs if l.split()[1:2] and l.split()[1] in _keep_dirs]
    imp_src = '\n'.join(head + [lines[i] for i in sorted(imp_lines)])
    rest = '\n'.join(l for i,l in enumerate(lines) if i not in imp_lines)
    return [imp_src, rest]

def tonb(src, dest):
    old = {}
    if Path(dest).exists():
        for c in json.loads(Path(dest).read_text())['cells']:
            if c['cell_type']=='code': old[''.join(c['source'])] = c.get('outputs', [])
    cells = []
    for c in py2cells(Path(src).read_text()):
      for part in (split_imports(c['source']) if c['cell_type']=='code' else [c['source']]):
        c = dict(c, source=part)
        lines = c['source'].splitlines(True)
        d = dict(cell_type=c['cell_type'], metadata={}, source=lines)
        if c['cell_type']=='code': d.update(execution_count=None, outputs=old.get(c['source'], []))
        cells.append(d)
    add_ids(cells)
    nb = dict(cells=cells, metadata=dict(kernelspec=dict(display_name='python3', language='python', name='python3')),
              nbformat=4, nbformat_minor=5)
    Path(dest).write_text(json.dumps(nb, indent=1, ensure_ascii=False)+'\n')

def add_ids(cells):
    "Stable cell ids from the cells' text, so nbdev-export writes the same module twice (it names cells by id)"
    seen = set()
    for c in cells:
        h = hashlib.sha1(''.join(c['source']).encode()).hexdigest()
        i = next(h[k:k+8] for k in range(0, 33) if h[k:k+8] not in seen)
        seen.add(i); c['id'] = i

def fix_ids(path):
    "Give a notebook's cells stable ids where they have none"
    nb = json.loads(Path(path).read_text())
    if all('id' in c for c in nb['cells']): return
    add_ids(nb['cells']); nb['nbformat_minor'] = max(nb.get('nbformat_minor', 5), 5)
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False)+'\n')

def topy(src, dest):
    out = []
    for c in json.loads(Path(src).read_text())['cells']:
        s = ''.join(c['source'])
        if c['cell_type']=='markdown': out += ['# %% [markdown]'] + [('# '+l) if l else '#' for l in s.splitlines()]
        else: out += ['# %%'] + s.splitlines()
        out.append('')
    Path(dest).write_text('\n'.join(out)+'\n')

if __name__=='__main__':
    cmd, *args = sys.argv[1:]
    if cmd=='ids': [fix_ids(p) for p in args]
    else: {'tonb': tonb, 'topy': topy}[cmd](*args)
