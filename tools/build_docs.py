"""Build the documentation site offline: `docs/` (one HTML page per notebook) and `README.md` (from nbs/index.ipynb).

    python tools/build_docs.py                # docs/ and README.md
    python tools/build_docs.py --out /tmp/d --no-readme

Quarto, which `nbdev-docs` uses, cannot be installed offline. This does the same two steps with what pip gives:
nbdev's own notebook processing (`proc_nbs`: directives, hidden cells, `show_doc` rendering, cuda/slow cells kept with
their saved outputs) and nbconvert to render each processed notebook to HTML, with a navigation bar between pages.
The notebooks' saved outputs (tables, plots) are what the pages show: run `nbdev-test --save` first to refresh them.
With Quarto installed, `nbdev-docs` still builds the usual nbdev site from the same notebooks."""
import argparse, html, re, shutil, sys, yaml
from jinja2 import DictLoader
from pathlib import Path
import nbformat
from nbconvert import HTMLExporter, MarkdownExporter
from nbdev.config import get_config
from nbdev.serve import proc_nbs

ROOT = Path(__file__).resolve().parent.parent

_css = """<style>
.fp-nav{position:sticky;top:0;z-index:10;background:#1f2937;padding:.55em 1em;font-family:system-ui,sans-serif}
.fp-nav a{color:#e5e7eb;margin-right:1.1em;text-decoration:none;font-size:.95em}
.fp-nav a.fp-here{color:#fff;font-weight:600;border-bottom:2px solid #60a5fa}
.fp-desc{font-size:1.15em;color:#4b5563;margin:.2em 0 1.2em}
</style>"""

def _frontmatter(nb):
    "Title and description from the front matter nbdev writes into the first (raw) cell"
    if nb.cells and nb.cells[0].cell_type=='raw' and nb.cells[0].source.startswith('---'):
        meta = yaml.safe_load(nb.cells[0].source.strip().strip('-')) or {}
        nb.cells.pop(0)
        return str(meta.get('title','')), str(meta.get('description',''))
    return None, None

_re_qlink = re.compile(r'\[([^\]]+)\]\(([^)\s]+)\)\{target="_blank" style="([^"]*)"\}')

def _clean(nb):
    "Turn nbdev's Quarto-flavoured notebook into one nbconvert renders well"
    for c in nb.cells:
        c.metadata.pop('execution', None)  # nbconvert rejects the notebook with it
        if c.cell_type!='code': c.pop('outputs', None); c.pop('execution_count', None); continue
        lines = c.source.splitlines()
        dirs = [l for l in lines if l.startswith('#|')]
        if any(re.match(r'#\|\s*echo:\s*false', d) for d in dirs): c.metadata.setdefault('tags', []).append('remove_input')
        c.source = '\n'.join(l for l in lines if not l.startswith('#|')).strip()
        outs = []
        for o in c.get('outputs', []):
            if o.get('output_type')=='stream':
                o['text'] = _terminal(o['text'])
                if not o['text'].strip(): continue
            outs.append(o)
            md = o.get('data', {}).get('text/markdown')
            if md: o['data']['text/markdown'] = _re_qlink.sub(r'<a href="\2" target="_blank" style="\3">\1</a>', _as_class(md))
        if 'outputs' in c: c.outputs = outs
    return nb

_re_src = re.compile(r'/blob/[^/]+/(fastperf/[\w/]+\.py)#L(\d+)')

def _as_class(md:str)->str:
    "A `show_doc` of a class with `class Name(` where fastcore's signature says `def Name(` (found from the source line it links to)"
    m = _re_src.search(md)
    if not m or not (f := ROOT/m.group(1)).exists(): return md
    lines = f.read_text().splitlines()[int(m.group(2))-1:]
    first = next((l for l in lines if not l.lstrip().startswith('@')), '')
    if not (k := re.match(r'\s*class (\w+)', first)): return md
    return re.sub(rf'^def {k.group(1)}\(', f'class {k.group(1)}(', md, count=1, flags=re.M)

# A third-party import warning that says nothing about fastperf (torchvision/fastai importing torch.jit.script)
_re_noise = re.compile(r'^\S+\.py:\d+: FutureWarning: `torch\.jit\.script` is deprecated.*\n\s+warnings\.warn\(.*$\n?', re.M)

_re_bar = re.compile(r'\|[█-]+\|\s+[\d.]+% \[\d+/\d+')  # a progress bar caught mid-redraw (it clears itself when done)

def _terminal(text:str)->str:
    "What a terminal would show of `text`: each line as its last carriage return left it (fastprogress bars redraw a line "
    "with `\\r`), fastprogress's '█' line markers and blank redraws dropped, known third-party import noise removed"
    lines = [l.rsplit('\r', 1)[-1] for l in _re_noise.sub('', text).split('\n')]
    return '\n'.join(l.rstrip() for l in lines if l.strip(' █') and not _re_bar.search(l))+('\n' if text.endswith('\n') else '')

# nbconvert's lab page without its head scripts: require.js, MathJax and Mermaid load from a CDN (an offline site cannot)
# and serve widgets, maths and diagrams, which no fastperf notebook has; their ~450 inline lines would repeat on every page
_page_template = """{%- extends 'index.html.j2' -%}
{% block html_head_js %}{% endblock %}{% block html_head_js_mathjax %}{% endblock %}{% block html_head_js_mermaidjs %}{% endblock %}"""

_re_style = re.compile(r'<style[^>]*>.*?</style>', re.S)

def _code(s): return re.sub(r'`([^`]+)`', r'<code>\1</code>', s)

def _pages(proc):
    nbs = sorted(proc.glob('*.ipynb'), key=lambda p: (p.stem!='index', p.stem))
    return [(p, 'index.html' if p.stem=='index' else p.stem.split('_',1)[-1]+'.html') for p in nbs]

def build(out=None, readme=True):
    cfg = get_config()
    out = Path(out or cfg.doc_path)
    proc = proc_nbs(cfg.nbs_path, n_workers=0)
    pages = _pages(proc)
    nbs = {}
    for p,name in pages:
        nb = _clean(nbformat.read(p, as_version=4))
        title,desc = _frontmatter(nb)
        nbs[name] = (nb, title or p.stem, desc)
    out.mkdir(parents=True, exist_ok=True)
    from traitlets.config import Config
    c = Config(); c.TagRemovePreprocessor.remove_input_tags = {'remove_input'}; c.TagRemovePreprocessor.enabled = True
    exporter = HTMLExporter(config=c, template_name='lab', extra_loaders=[DictLoader({'fastperf.html.j2': _page_template})],
                            template_file='fastperf.html.j2', exclude_input_prompt=True, exclude_output_prompt=True)
    pages = {}
    for name,(nb,title,desc) in nbs.items():
        nav = ''.join(f'<a href="{n}"{" class=fp-here" if n==name else ""}>{html.escape(t)}</a>' for n,(_,t,_) in nbs.items())
        body,_ = exporter.from_notebook_node(nb, resources=dict(metadata=dict(name=f'{title} - fastperf')))
        head = f'<nav class="fp-nav">{nav}</nav><main class="fp-page" style="max-width:1100px;margin:auto;padding:0 1em">' \
               f'<h1>{html.escape(title)}</h1>' + (f'<p class="fp-desc">{_code(html.escape(desc))}</p>' if desc else '')
        body = re.sub(r'(<body[^>]*>)', lambda m: m.group(1)+head, body, count=1).replace('</body>', '</main></body>', 1)
        if cfg.doc_url: body = body.replace(cfg.doc_url, '')  # links between pages stay inside the offline site
        pages[name] = body.replace('</head>', _css+'</head>', 1)
    # nbconvert inlines the same stylesheets into every page: keep one copy, shared by all pages
    styles = [set(_re_style.findall(b)) for b in pages.values()]
    common = [st for st in _re_style.findall(next(iter(pages.values()))) if all(st in ss for ss in styles)]
    (out/'site.css').write_text('\n'.join(re.sub(r'^<style[^>]*>|</style>$', '', st) for st in common))
    for name,body in pages.items():
        for i,st in enumerate(common): body = body.replace(st, '<link rel="stylesheet" href="site.css">' if i==0 else '', 1)
        (out/name).write_text(body)
    for f in proc.rglob('*'): # files the notebooks show (plots, results), at the same relative paths
        rel = f.relative_to(proc)
        if f.is_file() and f.suffix not in ('.ipynb', '.yml', '.yaml', '.py') and not any(p[0] in '._' for p in rel.parts):
            (out/rel).parent.mkdir(parents=True, exist_ok=True); shutil.copy2(f, out/rel)
    if readme and 'index.html' in nbs:
        nb,title,desc = nbs['index.html']
        md,_ = MarkdownExporter(config=c, exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(nb)
        top = f'# {title}\n\n' + (f'> {desc}\n\n' if desc else '')
        (cfg.config_path/'README.md').write_text(top + md.strip() + '\n')
    print(f"Built {len(nbs)} pages into {out}" + (" and README.md" if readme else ''))
    return out

if __name__=='__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', help='output folder (default: doc_path of pyproject.toml, docs/)')
    ap.add_argument('--no-readme', action='store_true', help='do not write README.md')
    a = ap.parse_args()
    build(a.out, readme=not a.no_readme)
