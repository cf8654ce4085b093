"""Authoring aid: convert between a percent-format script and a notebook (nbs/*.ipynb stay the source).

    python tools/nbpy.py topy nbs/02_cast.ipynb /tmp/02_cast.py   # edit as text ...
    python tools/nbpy.py tonb /tmp/02_cast.py nbs/02_cast.ipynb   # ... and write it back (outputs are kept
                                                                   #     for cells whose source did not change)
Cells are separated by `# %%` (code) or `# %% [markdown]` (markdown; each line starts with `# `)."""
import json, sys, re
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

def tonb(src, dest):
    old = {}
    if Path(dest).exists():
        for c in json.loads(Path(dest).read_text())['cells']:
            if c['cell_type']=='code': old[''.join(c['source'])] = c.get('outputs', [])
    cells = []
    for c in py2cells(Path(src).read_text()):
        lines = c['source'].splitlines(True)
        d = dict(cell_type=c['cell_type'], metadata={}, source=lines)
        if c['cell_type']=='code': d.update(execution_count=None, outputs=old.get(c['source'], []))
        cells.append(d)
    nb = dict(cells=cells, metadata=dict(kernelspec=dict(display_name='python3', language='python', name='python3')),
              nbformat=4, nbformat_minor=5)
    Path(dest).write_text(json.dumps(nb, indent=1, ensure_ascii=False)+'\n')

def topy(src, dest):
    out = []
    for c in json.loads(Path(src).read_text())['cells']:
        s = ''.join(c['source'])
        if c['cell_type']=='markdown': out += ['# %% [markdown]'] + [('# '+l) if l else '#' for l in s.splitlines()]
        else: out += ['# %%'] + s.splitlines()
        out.append('')
    Path(dest).write_text('\n'.join(out)+'\n')

if __name__=='__main__':
    cmd, a, b = sys.argv[1:4]
    {'tonb': tonb, 'topy': topy}[cmd](a, b)
