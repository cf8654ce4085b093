"""Run fastai's own notebook tests against the installed fastai, with and without fastperf, and tabulate the results.

fastai keeps its tests in its notebooks (`nbs/*.ipynb`). This harness runs their test/demo cells against the INSTALLED
fastai modules, offline, on the CPU, once per configuration, each time in a fresh Python process (nothing leaks from one
notebook or configuration to the next). It prints a markdown table notebook -> result per configuration, the reasons
notebooks fail plain, and, for every cell that passes plain but fails with fastperf, the cell's source and traceback tail.
Results (status, seconds, failing cells, first error lines, tracebacks) also go to a JSON file (`--out`).

Getting fastai's notebooks (they are not in the PyPI sdist):
  * with internet: `git clone --depth 1 https://github.com/fastai/fastai /tmp/fastai`, then pass `/tmp/fastai`
    (a work tree), `/tmp/fastai/nbs`, or `/tmp/fastai/.git` (a git dir: `--rev` picks the commit);
  * in an agent sandbox: the `fetch` tool on "github:kafkasl/fastai" gives a bare git dir
    (`/work/.mirror/kafkasl+fastai/repo`); pass it with `--rev ba7a7c12` (upstream fastai at 2.8.8, already on nbdev 3;
    the fork's later commits rework the text notebooks). Blobs a partial mirror lacks are reported and skipped.
The notebooks are extracted (or copied) to `<work>/nbs` (work dir default /tmp/fastai_suite) and run there, so files the
tests write (models/, export.pkl...) never land in the source.

How a notebook runs (close to `nbdev-test`, minus the exported code):
  * cells marked `#| export`/`exports`/`exporti` are skipped: the installed fastai module is their code (re-running them
    fails on today's fastcore anyway). In their place the process starts with the namespace of the notebook's
    `default_exp` module: `from fastai.<module> import *` plus the module's other (private) names. One exception: the
    top-level statements of exported cells that touch `defaults.callbacks` (13_callback.core, 13a_learner,
    16_callback.progress) are replayed in place, after `defaults.callbacks` is put back to what the notebook's exported
    imports leave it at, because fastai's tests count a Learner's callbacks as the notebook builds that list up;
  * cells marked with fastai's `tst_flags` (`slow`, `cuda`, `multicuda`, `cpp`) or `#| eval: false`, and cells calling
    `nbdev_export`/`notebook2script`, are skipped; notebooks whose front matter says `skip_exec: true` are not run;
  * the other cells run in order in an IPython shell (execnb's `CaptureShell`, as nbdev-test uses). Unlike nbdev-test a
    failing cell does not stop the notebook (`--stop` restores that): every configuration is compared with `plain` cell by
    cell, so a notebook with a few cells broken by fastai/fastcore drift still tests the rest;
  * `show_doc` is a no-op, torch uses 2 threads, `IN_TEST=1`, `FASTAI_HOME` points into the work dir;
  * `fastai.data.external.untar_data` is replaced (in every configuration alike) by a stand-in serving small synthetic
    datasets in the layout of fastai's MNIST_TINY, MNIST_SAMPLE, ADULT_SAMPLE and ML_SAMPLE (see `STANDINS`; built on
    first use under `<work>/data`) and raising `OfflineError` for any other URL (tests needing pretrained weights fail too).

Configurations (`--configs`, comma separated; edit `CONFIGS`/`EXTRA_CBS` below to change them). The fastperf prelude runs
right after the notebook's leading import-only cells, i.e. before its first cell that does anything else (in the three
notebooks that replay `defaults.callbacks`, the import goes in the fastai prelude and the callbacks are put in again after
each replayed statement):
  * plain  : nothing added;
  * import : `import fastperf.all` (the module, so fastperf names don't shadow the fastai names the tests use);
  * star   : `from fastperf.all import *` (not in the default set);
  * cbs    : as import, plus fastperf's CastToTensor (replacing fastai's entry) and ThroughputTimer in fastai's
             `defaults.callbacks`, so every Learner the tests build carries them;
  * cbs_cl : as cbs, plus fastperf's ChannelsLast;
  * infer  : as import, plus fastperf's CastToTensor and FastInference (its defaults: fp32, lean pipelines, no loss in
             `get_preds` without `with_loss`) in `defaults.callbacks` (not in the default set);
  * lean   : as import, plus `fast_loop` on every Learner as it is made (fastai's `Learner.__init__` wrapped in the test
             process): fastperf's `FastLoop` (its class in front of the Learner's, the `loop` and `inference` copies)
             under every test (not in the default set);
  * pipes  : as import, plus `lean_pipelines` on every fastai `TfmdDL` as it is made (fastai's `TfmdDL.__init__` wrapped in
             the test process; a subclass's own `__init__` may set more after it): fastperf's lean loaders (stacked, padded,
             tabular and language model batches, the item cache) under fastai's own tests of its loaders (not in the default set).
When `plain` is among the configs it runs first; the other configs then run the notebooks plain ran to the end (all of
them, or with `--clean` only those with no failing cell), and a cell counts against a configuration only if it passed plain.

Usage:
  python tools/fastai_suite.py SRC [--rev REV] [--configs plain,import,cbs,cbs_cl] [--only 13a,45_collab] [--list]
                                   [--clean] [--stop] [--update] [--timeout 600] [--out /tmp/fastai_suite.json]
                                   [--work /tmp/fastai_suite]
e.g. python tools/fastai_suite.py /work/.mirror/kafkasl+fastai/repo --rev ba7a7c12          # all notebooks, ~4 passes
     python tools/fastai_suite.py /work/.mirror/kafkasl+fastai/repo --rev ba7a7c12 --only 13a,16 --configs cbs --update
`--only` takes notebook name prefixes; `--update` reruns those into the existing `--out` results and reports them all. Runs are sequential (`--jobs` only accepts 1: torch processes oversubscribe small
CPUs). Table cells: `ok 12s`; `3 fail` (plain: cells failing); `=plain` (fails only cells that fail plain too);
`FAIL 2` (cells that pass plain fail here); `-` (not run). "cell N" is the cell's index in the notebook (markdown included)."""
import argparse, ast, json, os, re, shutil, signal, subprocess, sys, tempfile, time
from pathlib import Path

# fastperf callbacks a configuration adds to fastai's `defaults.callbacks` (a fastai entry of the same class name is replaced)
EXTRA_CBS = {
    'cbs':    ['fastperf.cast.CastToTensor', 'fastperf.timer.ThroughputTimer'],
    'cbs_cl': ['fastperf.cast.CastToTensor', 'fastperf.timer.ThroughputTimer', 'fastperf.channelslast.ChannelsLast'],
    'infer':  ['fastperf.cast.CastToTensor', 'fastperf.inference.FastInference'], # every loop outside fit as to_fast_inference(precision='fp32') runs it
}
# code a configuration runs right after the notebook's leading import cells (before its `EXTRA_CBS` go in)
CONFIGS = {
    'plain':  '',
    'import': 'import fastperf.all',
    'star':   'from fastperf.all import *',
    'cbs':    'import fastperf.all',
    'cbs_cl': 'import fastperf.all',
    'infer':  'import fastperf.all',
    # every Learner the tests build gets fastperf's `FastLoop` (`fast_loop`: events only to the callbacks that handle them,
    # the lean Recorder, ...) as it is made (this harness wraps fastai's `Learner.__init__`, in the test process only)
    'lean':   '''import fastperf.all, functools as _fp_ft
from fastperf.copies import fast_loop as _fp_sfd
import fastai.learner as _fp_fl
_fp_init = _fp_fl.Learner.__init__
@_fp_ft.wraps(_fp_init)
def _fp_lean_init(self, *args, **kwargs): _fp_init(self, *args, **kwargs); _fp_sfd(self)
_fp_fl.Learner.__init__ = _fp_lean_init''',
    # every fastai `TfmdDL` the tests build (and every one `new` makes of it) gets `lean_pipelines` as it is made (fastai's
    # `TfmdDL.__init__` wrapped in the test process): the lean item and batch pipelines, stacked, padded, tabular and language
    # model batches, the item cache, under fastai's own tests of its loaders
    'pipes':  '''import fastperf.all, functools as _fp_ft
from fastperf.copies import lean_pipelines as _fp_lp
import fastai.data.core as _fp_dc
_fp_dinit = _fp_dc.TfmdDL.__init__
@_fp_ft.wraps(_fp_dinit)
def _fp_lean_dl(self, *args, **kwargs): _fp_dinit(self, *args, **kwargs); _fp_lp(self)
_fp_dc.TfmdDL.__init__ = _fp_lean_dl''',
}
DEFAULT_CONFIGS = 'plain,import,cbs,cbs_cl'
EXPORT_FLAGS = {'export', 'exports', 'exporti'}
SKIP_FLAGS = EXPORT_FLAGS | {'slow', 'cuda', 'multicuda', 'cpp'}                   # cell directives never run
SKIP_CODE = re.compile(r'\b(nbdev_export|notebook2script)\s*\(')                    # nbdev housekeeping cells
THREADS = 2

# ---------------------------------------------------------------------------------------------------- getting notebooks
def extract_nbs(src, rev, work):
    "Put fastai's notebooks from `src` (nbs dir, repo work tree, or git dir at `rev`) in `work/nbs`; return (dir, missing names)"
    src, dest = Path(src).expanduser(), Path(work)/'nbs'
    if dest.exists(): shutil.rmtree(dest)
    if ((src/'objects').is_dir() and (src/'HEAD').exists()) or src.name == '.git': return dest, _from_git(src, rev, dest)
    nbs = src/'nbs' if (src/'nbs').is_dir() else src
    if not list(nbs.glob('*.ipynb')): sys.exit(f"no notebooks in {nbs}: pass fastai's nbs dir, repo, or git dir (see --help)")
    shutil.copytree(nbs, dest)
    return dest, []

def _from_git(gd, rev, dest):
    git = ['git', f'--git-dir={gd}']
    ls = subprocess.run(git+['ls-tree', '-r', '-z', rev, 'nbs'], capture_output=True, check=True).stdout.decode()
    blobs = [(l.split('\t', 1)[1], l.split()[2]) for l in ls.split('\0') if l and l.split()[1] == 'blob']
    if not blobs: sys.exit(f'no nbs/ folder at {rev} in {gd}')
    p = subprocess.Popen(git+['cat-file', '--batch'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    missing = []
    for path, sha in blobs:
        p.stdin.write(f'{sha}\n'.encode()); p.stdin.flush()
        head = p.stdout.readline().decode().split()
        if head[-1] == 'missing': missing.append(Path(path).stem); continue
        data = p.stdout.read(int(head[2])); p.stdout.read(1)
        f = dest.parent/path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    p.stdin.close(); p.wait()
    return missing

# ------------------------------------------------------------------------------------------------------ reading a notebook
_dir_re = re.compile(r'^\s*#\s*\|\s*([\w-]+)\s*:?\s*(.*)$')
def directives(src):
    "{name: value} of the `#|` directive lines of a cell"
    return {m[1]: m[2].strip() for m in map(_dir_re.match, src.splitlines()) if m}

def _skip(src):
    d = directives(src)
    return bool(SKIP_FLAGS & set(d)) or d.get('eval', '').lower() == 'false' or bool(SKIP_CODE.search(src))

def _import_only(src):
    try: body = ast.parse(src).body
    except SyntaxError: return False
    return all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body)

def _exported_parts(src):
    "(top-level imports, top-level statements touching `defaults.callbacks`) of an exported cell, as source"
    try: body = ast.parse(src).body
    except SyntaxError: return [], []
    seg = lambda n: ast.get_source_segment(src, n)
    imps = [seg(n) for n in body if isinstance(n, (ast.Import, ast.ImportFrom)) and getattr(n, 'module', '') != '__future__']
    cbs = [seg(n) for n in body if isinstance(n, (ast.If, ast.Assign, ast.AugAssign, ast.Expr)) and 'defaults.callbacks' in seg(n)]
    return imps, cbs

def read_nb(fn):
    """(default_exp module, front matter says skip_exec, [(cell label, source)] of the cells to run, exported imports).
    Exported cells are left out, except their top-level statements touching `defaults.callbacks`: fastai's tests count a
    Learner's callbacks as the notebook builds that list up, so those statements are replayed in place (see `plan`)."""
    nb = json.loads(Path(fn).read_text())
    srcs = [(i, c['cell_type'], ''.join(c['source'])) for i, c in enumerate(nb['cells'])]
    mod = next((directives(s)['default_exp'] for i, t, s in srcs if 'default_exp' in directives(s)), None)
    fm = next((s for i, t, s in srcs if t in ('raw', 'markdown') and s.lstrip().startswith('---')), '')
    skip_exec = bool(re.search(r'^skip_exec:\s*true', fm, re.M | re.I))
    cells, exp_imps = [], []
    for i, t, s in srcs:
        if t != 'code' or not s.strip(): continue
        if not _skip(s): cells.append((f'cell {i}', s)); continue
        d = set(directives(s))
        if d & EXPORT_FLAGS and not d & (SKIP_FLAGS - EXPORT_FLAGS):
            imps, cbs = _exported_parts(s)
            exp_imps += imps
            if cbs: cells.append((f'cell {i} (exported defaults.callbacks)', '\n'.join(cbs)))
    return mod, skip_exec, cells, exp_imps

def candidates(nbs):
    "Notebooks nbdev-test would look at: `nbs/*.ipynb` not starting with `_` or `.`"
    return sorted(f for f in Path(nbs).glob('*.ipynb') if not f.name.startswith(('_', '.')))

def select(names, only):
    "The names in `names` starting with one of the comma separated prefixes in `only` (all if empty)"
    keys = [k.strip().removesuffix('.ipynb') for k in only.split(',') if k.strip()]
    return [n for n in names if not keys or any(Path(n).stem.startswith(k) for k in keys)]

# ---------------------------------------------------------------------------------------------- synthetic offline data
def _digit(d, rng):
    from PIL import Image, ImageDraw, ImageFont
    im = Image.new('L', (28, 28), 0)
    try: font = ImageFont.load_default(size=22)
    except TypeError: font = ImageFont.load_default()
    ImageDraw.Draw(im).text((7 + rng.integers(-2, 3), rng.integers(-1, 3)), str(d), fill=int(rng.integers(180, 256)), font=font)
    return im.rotate(float(rng.uniform(-12, 12)))

def make_mnist(dest, n_train=40, n_valid=40, n_test=0, label_of=None):
    """MNIST_TINY/MNIST_SAMPLE layout: train/{3,7}, valid/{3,7}, test/ 28x28 PNGs of drawn digits, labels.csv (name,label).
    `n_train`, `n_valid`: images per digit, or {digit: count}"""
    import numpy as np
    rng, rows, k = np.random.default_rng(0), [], 0
    for split, n in (('train', n_train), ('valid', n_valid)):
        for d in (3, 7):
            (dest/split/str(d)).mkdir(parents=True)
            for _ in range(n[d] if isinstance(n, dict) else n):
                name = f'{split}/{d}/{k}.png'; k += 1
                _digit(d, rng).save(dest/name); rows.append(f'{name},{(label_of or {}).get(d, d)}')
    (dest/'test').mkdir(); (dest/'models').mkdir()
    for j in range(n_test): _digit((3, 7)[j % 2], rng).save(dest/'test'/f'{k+j}.png')
    (dest/'labels.csv').write_text('name,label\n' + '\n'.join(rows) + '\n')

def make_adult(dest, n=11000):
    "ADULT_SAMPLE layout: adult.csv with the census columns (categories with a leading space, some NaNs, salary >=50k/<50k)"
    import numpy as np, pandas as pd
    rng = np.random.default_rng(0)
    cats = dict(workclass=['Private', 'Self-emp-not-inc', 'Local-gov', 'State-gov', '?'],
                education=['HS-grad', 'Some-college', 'Bachelors', 'Masters', 'Assoc-voc', '11th', 'Doctorate'],
                **{'marital-status': ['Married-civ-spouse', 'Never-married', 'Divorced', 'Widowed']},
                occupation=['Prof-specialty', 'Craft-repair', 'Exec-managerial', 'Adm-clerical', 'Sales', 'Other-service'],
                relationship=['Husband', 'Not-in-family', 'Own-child', 'Unmarried', 'Wife'],
                race=['White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other'], sex=['Male', 'Female'],
                **{'native-country': ['United-States', 'Mexico', 'Philippines', 'Germany']})
    age = rng.integers(17, 90, n); edu = rng.integers(1, 17, n).astype(float)
    df = pd.DataFrame({'age': age, 'fnlwgt': rng.integers(12000, 1500000, n), 'education-num': edu,
                       **{k: [' '+v for v in rng.choice(vs, n)] for k, vs in cats.items()},
                       'capital-gain': rng.integers(0, 2, n)*rng.integers(0, 20000, n), 'capital-loss': np.zeros(n, int),
                       'hours-per-week': rng.integers(10, 80, n)})
    df.loc[rng.random(n) < 0.015, 'education-num'] = np.nan
    for c in ('workclass', 'occupation'): df.loc[rng.random(n) < 0.015, c] = np.nan
    df['salary'] = np.where(age/90 + edu/16 + rng.normal(0, .3, n) > 1.1, '>=50k', '<50k')
    cols = ['age', 'workclass', 'fnlwgt', 'education', 'education-num', 'marital-status', 'occupation', 'relationship',
            'race', 'sex', 'capital-gain', 'capital-loss', 'hours-per-week', 'native-country', 'salary']
    dest.mkdir(parents=True); df[cols].to_csv(dest/'adult.csv', index=False)

def make_movielens(dest, n_users=100, n_movies=100, n=6000):
    "ML_SAMPLE layout: ratings.csv (userId,movieId,rating,timestamp)"
    import numpy as np, pandas as pd
    rng = np.random.default_rng(0)
    u, m = rng.integers(1, n_users+1, n), rng.integers(1, n_movies+1, n)
    r = np.clip(np.round((u % 5)/2 + (m % 7)/3 + rng.normal(2, .7, n)), 1, 5)
    dest.mkdir(parents=True)
    pd.DataFrame(dict(userId=u, movieId=m*10, rating=r, timestamp=rng.integers(9e8, 1.4e9, n))).drop_duplicates(
        ['userId', 'movieId']).to_csv(dest/'ratings.csv', index=False)

STANDINS = {  # `URLs` attribute -> (folder, builder, kwargs)
    'MNIST_TINY':   ('mnist_tiny',        make_mnist, dict(n_train={3: 346, 7: 363}, n_valid=40, n_test=20)),  # real counts but valid
    'MNIST_SAMPLE': ('mnist_sample',      make_mnist, dict(n_train=60, n_valid=30, label_of={3: 0, 7: 1})),
    'ADULT_SAMPLE': ('adult_sample',      make_adult, {}),
    'ML_SAMPLE':    ('movie_lens_sample', make_movielens, {}),
}

class OfflineError(RuntimeError): pass

def standin(data_dir, key):
    "Path of the synthetic `STANDINS[key]` dataset under `data_dir`, built on first use"
    name, make, kw = STANDINS[key]
    dest, stamp = Path(data_dir)/name, repr((make.__name__, kw))
    if dest.exists() and not (dest/'.fastai_suite').is_file() or dest.exists() and (dest/'.fastai_suite').read_text() != stamp:
        shutil.rmtree(dest)   # built by another version of `STANDINS`
    if not dest.exists():
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=data_dir))/name
        make(tmp, **kw)
        (tmp/'.fastai_suite').write_text(stamp)
        try: tmp.rename(dest)
        except OSError: pass    # built meanwhile by another process
        shutil.rmtree(tmp.parent, ignore_errors=True)
    return dest

def install_standins(data_dir):
    "Replace `fastai.data.external.untar_data` by a stand-in serving `STANDINS` (call before other fastai imports)"
    import fastai.data.external as fde
    urls = {getattr(fde.URLs, k): k for k in STANDINS}
    def untar_data(url, archive=None, data=None, c_key='data', force_download=False, base=None):
        "fastai_suite stand-in for `untar_data`: synthetic data for `STANDINS`, `OfflineError` otherwise"
        if url not in urls: raise OfflineError(f'offline: fastai_suite has no stand-in for {url}')
        return standin(data_dir, urls[url])
    fde.untar_data = untar_data

# ------------------------------------------------------------------------------------------ the per-notebook process
def module_prelude(mod, exp_imps, replay, pre=''):
    """Code giving the shell the namespace the notebook's exported cells would have made. With `replay` (the notebook's
    exported `defaults.callbacks` statements will run) the config's import `pre` runs here too, then `defaults.callbacks`
    is put back to what the notebook's own exported imports leave it at, before its module (or fastperf) added to it."""
    code = (f'from fastai.{mod} import *\nimport fastai.{mod} as _fs_mod\n'
            "globals().update({k:v for k,v in vars(_fs_mod).items() if not (k.startswith('__') and k.endswith('__'))})\n"
            'del _fs_mod')
    if not replay: return code
    if pre: code += '\n' + pre
    return '\n'.join(exp_imps) + f"""
from fastcore.basics import defaults as _fs_d
_fs_cbs0 = list(_fs_d.callbacks) if hasattr(_fs_d, 'callbacks') else None
{code}
if _fs_cbs0 is not None: _fs_d.callbacks = _fs_cbs0
elif hasattr(_fs_d, 'callbacks'): del _fs_d.callbacks
del _fs_d,_fs_cbs0"""

def cbs_code(config):
    "Code putting `EXTRA_CBS[config]` in `defaults.callbacks` (idempotent)"
    cbs = EXTRA_CBS.get(config, [])
    if not cbs: return ''
    return f'''
import importlib as _fs_il
from fastcore.basics import defaults as _fs_defaults
_fs_cbs = list(getattr(_fs_defaults, 'callbacks', []))
for _fs_p in {cbs!r}:
    _fs_m,_,_fs_n = _fs_p.rpartition('.')
    _fs_c = getattr(_fs_il.import_module(_fs_m), _fs_n)
    _fs_i = [i for i,c in enumerate(_fs_cbs) if c.__name__==_fs_c.__name__]
    if _fs_i: _fs_cbs[_fs_i[0]] = _fs_c
    else: _fs_cbs.append(_fs_c)
    _fs_cbs = [c for j,c in enumerate(_fs_cbs) if j not in _fs_i[1:]]
_fs_defaults.callbacks = _fs_cbs
del _fs_il,_fs_defaults,_fs_cbs,_fs_p,_fs_m,_fs_n,_fs_c,_fs_i'''.strip()

def plan(fn, config):
    "[(label, source)] the process for notebook `fn` under `config` runs (preludes must pass; cells are compared with plain)"
    mod, _, cells, exp_imps = read_nb(fn)
    replay = mod and any('exported' in label for label, s in cells)
    pre, cbs = CONFIGS[config], cbs_code(config)
    steps = [('prelude:fastai', module_prelude(mod, exp_imps, replay, pre))] if mod else []
    if replay: pre = ''   # imported in the fastai prelude, whose `defaults.callbacks` the notebook then builds up again
    at = next((k for k, (label, s) in enumerate(cells) if not _import_only(s)), len(cells))
    steps += cells[:at] + ([(f'prelude:{config}', f'{pre}\n{cbs}'.strip())] if pre or cbs else [])
    for label, src in cells[at:]:   # a replayed `defaults.callbacks` statement is followed by the config's callbacks again
        steps += [(label, src)] + ([(f'prelude:{config} again', cbs)] if cbs and 'exported' in label else [])
    return steps

def _fail_info(e, src):
    "First error line, source and traceback tail (and the tail of any exception it was raised from) of a failing cell"
    import traceback
    def tail(x, n):
        tb = x.__traceback__
        while tb and 'IPython' in tb.tb_frame.f_code.co_filename: tb = tb.tb_next   # drop the shell's own frames
        return '\n'.join(''.join(traceback.format_exception(type(x), x, tb, chain=False)).rstrip().splitlines()[-n:])
    tb, x, seen = tail(e, 25), e, {id(e)}
    while (x := x.__cause__ or x.__context__) is not None and id(x) not in seen:
        seen.add(id(x)); tb = tail(x, 12) + '\n--- which led to ---\n' + tb
    return dict(error=(f'{type(e).__name__}: {e}'.splitlines() or [''])[0][:300], src=src, tb=tb)

def child(spec_file):
    "Body of the subprocess: run the steps of `spec_file` in a fresh IPython shell, writing the result JSON as it goes"
    spec = json.loads(Path(spec_file).read_text())
    os.chdir(spec['cwd'])
    import torch; torch.set_num_threads(THREADS)
    res = dict(cells_run=0, cells_total=len(spec['steps']), fails=[], where='harness')
    def out(): Path(spec['result']).write_text(json.dumps(res))
    try:
        install_standins(spec['data'])
        import nbdev.showdoc; nbdev.showdoc.show_doc = lambda *a, **k: None   # notebooks' `from nbdev.showdoc import *` gets this
        from execnb.shell import CaptureShell
        sh = CaptureShell(timeout=spec['cell_timeout'])
    except Exception as e:
        res['fails'].append(dict(where=res.pop('where'), **_fail_info(e, ''))); out(); os._exit(0)
    for label, src in spec['steps']:
        res['where'] = label; out()                                   # so a timeout or crash still says where it was
        sh.run(src)
        res['cells_run'] += 1
        if sh.exc:
            res['fails'].append(dict(where=label, **_fail_info(sh.exc, src)))
            if spec['stop'] or label.startswith('prelude'): break
    res.pop('where')
    out()
    os._exit(0)   # don't wait on leftover DataLoader workers or event loops

def run_one(fn, config, args, data_dir):
    "Run notebook `fn` under `config` in a fresh process: {status: pass|fail|died, seconds, fails: [{where, error, src, tb}]}"
    tmp = Path(tempfile.mkdtemp(dir=args.work))
    spec = dict(cwd=str(fn.parent), steps=plan(fn, config), data=str(data_dir), cell_timeout=args.timeout,
                stop=args.stop, result=str(tmp/'result.json'))
    (tmp/'spec.json').write_text(json.dumps(spec))
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS), IN_TEST='1', MPLBACKEND='Agg',
               FASTAI_HOME=str(Path(args.work)/'fastai_home'), PYTHONWARNINGS='ignore')
    log = Path(args.work)/'logs'/f'{fn.stem}.{config}.log'
    log.parent.mkdir(exist_ok=True)
    t0 = time.time()
    with open(log, 'w') as lf:
        p = subprocess.Popen([sys.executable, __file__, '--_child', str(tmp/'spec.json')], stdout=lf, stderr=subprocess.STDOUT,
                             env=env, start_new_session=True)
        try: p.wait(args.timeout)
        except subprocess.TimeoutExpired: pass
        timed_out = p.poll() is None
        try: os.killpg(p.pid, signal.SIGKILL)   # the group we started: the notebook process and its DataLoader workers
        except ProcessLookupError: pass
        p.wait()
    try: res = json.loads((tmp/'result.json').read_text())
    except (OSError, ValueError): res = dict(fails=[], where='harness')
    shutil.rmtree(tmp, ignore_errors=True)
    if 'where' in res:   # never finished
        why = f'timeout after {args.timeout}s' if timed_out else f'process died (exit {p.returncode}; see {log})'
        res['fails'].append(dict(where=res['where'], error=why, src=dict(spec['steps']).get(res['where'], ''), tb=''))
    res.update(status='died' if 'where' in res else 'fail' if res['fails'] else 'pass', seconds=round(time.time()-t0, 1), log=str(log))
    return res

def compare(res, plain):
    "Mark `res` fails not among `plain`'s as new; status 'same' when all of them fail plain too"
    old = {f['where'] for f in (plain or {}).get('fails', [])}
    for f in res['fails']: f['new'] = f['where'] not in old
    if res['status'] != 'died': res['status'] = 'pass' if not res['fails'] else 'fail' if any(f['new'] for f in res['fails']) else 'same'
    return res

# ------------------------------------------------------------------------------------------------------------- report
def reason(f):
    "Short cause of a failure"
    e = f.get('error', '')
    if 'OfflineError' in e or re.search(r'URLError|Name or service not known|ConnectionError|HTTPError|gaierror', e):
        return 'download: ' + e.split(': ', 1)[-1]
    if re.search(r'\bcuda\b|CUDA|GPU', e): return 'needs GPU: ' + e
    if e.startswith(('ModuleNotFoundError', 'ImportError')) or 'module is missing' in e: return 'missing package: ' + e
    return e

def _cell(r, plain):
    if r is None: return '-'
    if r['status'] == 'pass': return f"ok {r['seconds']:.0f}s"
    if plain: return f"{len(r['fails'])} fail" + (' (died)' if r['status'] == 'died' else '')
    if r['status'] == 'same': return '=plain'
    return f"**FAIL {sum(f['new'] for f in r['fails'])}**" + (' (died)' if r['status'] == 'died' else '')

def report(results, configs, missing, skipped):
    "Markdown: the table, why notebooks fail plain, what was not run, and the cells that fail with fastperf only"
    lines = ['| notebook | ' + ' | '.join(configs) + ' | note |', '|' + '---|'*(len(configs)+2)]
    for nb, per in results.items():
        notes = []
        for c in configs:
            r = per.get(c)
            if not r or r['status'] in ('pass', 'same'): continue
            f = next(f for f in r['fails'] if f.get('new', True))
            notes.append(f"{c} {f['where']}: " + (reason(f) if c == 'plain' else f['error']))
        note = '; '.join(notes).replace('|', '\\|').replace('\n', ' ')
        lines.append(f'| {nb} | ' + ' | '.join(_cell(per.get(c), c == 'plain') for c in configs) + f' | {note[:220]} |')
    out = '\n'.join(lines)
    if 'plain' in configs:
        bad = {nb: per['plain'] for nb, per in results.items() if per.get('plain', {}).get('status', 'pass') != 'pass'}
        if bad: out += '\n\n## Fail plain (their failing cells are not counted against the other configs)\n' + '\n'.join(
            f"- {nb}: {len(r['fails'])} cell(s), first {r['fails'][0]['where']}: {reason(r['fails'][0])}" for nb, r in bad.items())
    for why in sorted(set(skipped.values())): out += f'\n\nNot run ({why}): ' + ', '.join(k for k, v in skipped.items() if v == why)
    if missing: out += '\n\nMissing from the source (blob absent): ' + ', '.join(missing)
    diag = [(nb, c, f) for nb, per in results.items() for c, r in per.items() if c != 'plain' for f in r['fails'] if f['new']]
    if diag: out += '\n\n## Cells that pass plain but fail with fastperf'
    for nb, c, f in diag:
        src = '\n'.join(f['src'].splitlines()[:12])
        out += f"\n\n### {nb} [{c}] {f['where']}\n```python\n{src}\n```\n```\n{f['tb'] or f['error']}\n```"
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('src', nargs='?', help="fastai's nbs dir, a fastai repo work tree, or a fastai git dir (see above)")
    ap.add_argument('--rev', default='HEAD', help='commit to read when SRC is a git dir (default HEAD)')
    ap.add_argument('--configs', default=DEFAULT_CONFIGS, help=f'comma separated, of {",".join(CONFIGS)} (default {DEFAULT_CONFIGS})')
    ap.add_argument('--only', default='', help='comma separated notebook name prefixes, e.g. 13a,45_collab')
    ap.add_argument('--list', action='store_true', help='print the notebooks that would run (and those that would not) and exit')
    ap.add_argument('--clean', action='store_true', help='run the non-plain configs only on notebooks with no cell failing plain')
    ap.add_argument('--stop', action='store_true', help='stop a notebook at its first failing cell, as nbdev-test does')
    ap.add_argument('--update', action='store_true',
                    help='start from the results in --out and rerun only the selected notebooks; the report covers all')
    ap.add_argument('--timeout', type=int, default=600, help='seconds per notebook process (default 600)')
    ap.add_argument('--jobs', type=int, default=1, help='processes at a time: only 1 is supported')
    ap.add_argument('--out', default='/tmp/fastai_suite.json', help='JSON results (default /tmp/fastai_suite.json)')
    ap.add_argument('--work', default='/tmp/fastai_suite', help='work dir: extracted notebooks, data, logs (default /tmp/fastai_suite)')
    ap.add_argument('--_child', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child: return child(args._child)
    if not args.src: ap.error("SRC is required (see above for how to get fastai's notebooks)")
    if args.jobs != 1: ap.error('--jobs: only 1 is supported (torch processes oversubscribe small CPUs)')
    configs = [c.strip() for c in args.configs.split(',') if c.strip()]
    if bad := [c for c in configs if c not in CONFIGS]: ap.error(f'unknown configs {bad}; known: {list(CONFIGS)}')
    configs = sorted(set(configs), key=list(CONFIGS).index)   # plain first
    Path(args.work).mkdir(parents=True, exist_ok=True)
    nbs, missing = extract_nbs(args.src, args.rev, args.work)
    missing = [m for m in select(missing, args.only) if not m.startswith('_')]
    files = [nbs/f'{n}.ipynb' for n in select([f.stem for f in candidates(nbs)], args.only)]
    info = {f.stem: read_nb(f) for f in files}
    skipped = {n: 'front matter `skip_exec: true`' if skip else 'no cells to run' for n, (_, skip, cells, _) in info.items()
               if skip or not cells}
    files = [f for f in files if f.stem not in skipped]
    if args.list:
        print('\n'.join(f'{f.stem}  ({len(info[f.stem][2])} cells, module {"fastai."+info[f.stem][0] if info[f.stem][0] else "-"})' for f in files))
        for why in sorted(set(skipped.values())): print(f'not run ({why}):', ', '.join(k for k, v in skipped.items() if v == why))
        if missing: print('missing from source:', ', '.join(missing))
        return
    data_dir = Path(args.work)/'data'
    results, t0, run_configs = {f.stem: {} for f in files}, time.time(), configs
    if args.update and Path(args.out).exists():
        prev = json.loads(Path(args.out).read_text())
        results = dict(sorted({**prev['results'], **{n: prev['results'].get(n, {}) for n in results}}.items()))
        configs = sorted(set(prev['configs']) | set(configs), key=list(CONFIGS).index)
        skipped, missing = {**prev['skipped'], **skipped}, sorted(set(prev['missing']) | set(missing))
    def save(): Path(args.out).write_text(json.dumps(dict(src=str(args.src), rev=args.rev, configs=configs, missing=missing,
                                                          skipped=skipped, results=results), indent=1))
    for config in run_configs:
        for f in files:
            plain = results[f.stem].get('plain')
            if config != 'plain' and plain and (plain['status'] == 'died' or args.clean and plain['status'] != 'pass'): continue
            r = compare(run_one(f, config, args, data_dir), plain if config != 'plain' else None)
            results[f.stem][config] = r
            first = next((x for x in r['fails'] if x['new']), None)
            print(f"{config:7s} {f.stem:30s} {r['status']:4s} {r['seconds']:6.1f}s " +
                  (f"{len(r['fails'])} fail(s); {first['where']}: {first['error'][:90]}" if first else ''), file=sys.stderr, flush=True)
            save()
    for per in results.values():
        for c, r in per.items():
            if c != 'plain': compare(r, per.get('plain'))
    save()
    print(f'\ntotal {time.time()-t0:.0f}s; JSON in {args.out}; logs in {Path(args.work)/"logs"}\n', file=sys.stderr)
    print(report(results, configs, missing, skipped))

if __name__ == '__main__': main()
