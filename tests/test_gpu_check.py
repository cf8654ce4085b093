"tools/gpu_check.sh in CPU mode, as CI runs it: fresh processes, the files it leaves, its summary, failures kept apart."
import importlib.util, json, os, subprocess, sys, tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

def _check(*args, timeout=400, **env_add): # a guard against hangs; CPU mode takes 60-170 s on a loaded 2-core machine
    env = {**{k:v for k,v in os.environ.items() if k!='OUT'}, **env_add} # ($OUT would win over the folder argument)
    env['PATH'] = os.pathsep.join([str(Path(sys.executable).parent), env.get('PATH', '')]) # python3 = this interpreter
    return subprocess.run(['bash', str(REPO/'tools'/'gpu_check.sh'), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)

def _mod():
    spec = importlib.util.spec_from_file_location('gpu_check', REPO/'tools'/'gpu_check.py')
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

def test_cpu_mode_end_to_end(tmp_path):
    out = tmp_path/'out'
    r = _check(out, '--cpu', '--work', tmp_path/'work', '--wheels', tmp_path/'nowheels')
    assert r.returncode==0, r.stdout[-4000:]+r.stderr[-2000:]
    files = sorted(p.name for p in out.iterdir())
    assert files==['bench_results.csv', 'gpu_check.tar.gz', 'parity.csv', 'summary.json', 'summary.md', 'timer.csv']
    assert all(p.is_file() for p in out.iterdir()) and len(files)<=8 # what the device tool brings back
    js = json.loads((out/'summary.json').read_text())
    st = {s['step']:s['status'] for s in js['steps']}
    assert js['mode']=='cpu' and st=={'env':'ok', 'install':'ok', 'parity':'ok', 'timer':'ok', 'bench':'ok', 'notebooks':'skipped', 'zoo':'skipped', 'workflows':'skipped'}
    assert '26_parity.ipynb' in js['cuda_notebooks'] and '09_timer.ipynb' in js['cuda_notebooks']
    md = (out/'summary.md').read_text()
    assert 'CPU mode: GPU steps skipped' in md and 'Skipped or replaced (no GPU)' in md and 'no wheels in' in md
    assert '| train | fastai + to_fastperf() |' in md and 'ok fastai defaults vs plain PyTorch (fp32)' in md and 'perf_counter' in md
    assert md.strip().splitlines()[0] in r.stdout # the summary is printed
    with tarfile.open(out/'gpu_check.tar.gz') as tf: names = set(tf.getnames())
    assert {'logs/parity.log', 'logs/timer.log', 'logs/bench.log', 'parity/parity.json', 'timer/timer.csv', 'bench/results.csv', 'summary.md'} <= names
    t = (out/'timer.csv').read_text().splitlines()
    assert 'timer / outside clock' in t[0] and len(t)==2

def test_failures_are_recorded_and_the_rest_runs(tmp_path):
    out = tmp_path/'out'
    r = _check(out, '--cpu', '--only', 'parity', 'timer', '--parity-args=--bogus', '--limit', 'timer=2', '--work', tmp_path/'work')
    assert r.returncode==1
    st = {s['step']:s for s in json.loads((out/'summary.json').read_text())['steps']}
    assert st['parity']['status']=='FAILED' and 'unrecognized arguments' in st['parity']['note']
    assert st['timer']['status']=='timeout' and st['bench']['status']=='skipped' # the timer ran after parity failed, and was stopped at its limit
    assert (out/'gpu_check.tar.gz').exists() and (out/'summary.md').exists()

def test_duplicate_wheels_stop_the_install(tmp_path):
    w = tmp_path/'whl'; w.mkdir()
    for v in ('1.0', '2.0'): (w/f'fastcore-{v}-py3-none-any.whl').write_bytes(b'')
    r = _check(tmp_path/'out', '--cpu', '--only', 'install', '--wheels', w, '--work', tmp_path/'work')
    assert r.returncode==1 and 'two versions of fastcore' in r.stdout

def test_zoo_and_workflows_steps(tmp_path):
    "The steps that run only when asked, in one call: the task zoo, one process per task, its tables joined into a top-level zoo.csv; "
    "the workflow suite, its pytest line in the summary (on a CPU one session: the `tasks` one unless FASTPERF_WORKFLOWS names others; here none, "
    "so the suite's own sessions are not run twice: tests/test_workflows.py runs them)"
    out = tmp_path/'out'
    r = _check(out, '--cpu', '--only', 'zoo', 'workflows', '--zoo-args=--tasks tabular digits_cnn --rounds 1 --no-infer --threads 1',
               '--work', tmp_path/'work', FASTPERF_WORKFLOWS='none')
    js = json.loads((out/'summary.json').read_text())
    zs = [s for s in js['steps'] if s['step']=='zoo']
    assert r.returncode==0 and [(s['notebook'], s['status']) for s in zs]==[('tabular', 'ok'), ('digits_cnn', 'ok')], r.stdout[-3000:]
    assert {s['step']:s['status'] for s in js['steps']}['workflows']=='ok', r.stdout[-3000:]
    rows = (out/'zoo.csv').read_text().splitlines()
    assert rows[0].startswith('task,') and {l.split(',')[0] for l in rows[1:]}=={'tabular', 'digits_cnn'}
    md = (out/'summary.md').read_text()
    import torch
    from fastperf.rules import precision_rule
    conv = precision_rule(torch.device('cpu'), True) # the CNN's precision is this CPU's rule: bf16 where it has bf16 arithmetic (avx512_bf16/AMX), else fp32
    assert '## Task zoo' in md and 'ok losses tabular (fp32)' in md and f'ok losses digits_cnn ({conv})' in md, md[-2000:]
    assert '## Workflow suite' in md and '1 passed' in md and 'skipped' in md, md[-1500:]

def test_bad_arguments():
    r = _check('--limit', 'turbo=3')
    assert r.returncode==2 and 'STEP=SECONDS' in r.stderr

def test_cuda_notebooks(tmp_path):
    cell = lambda src: dict(cell_type='code', source=src, metadata={}, outputs=[], execution_count=None)
    nb = lambda *cells: json.dumps(dict(cells=list(cells), metadata={}, nbformat=4, nbformat_minor=5))
    (tmp_path/'a.ipynb').write_text(nb(cell('x = 1'), cell(['#| cuda\n', 'y = 2'])))
    (tmp_path/'b.ipynb').write_text(nb(cell('# not #| cuda here'), dict(cell_type='markdown', source='#| cuda', metadata={})))
    (tmp_path/'c.ipynb').write_text(nb(cell('#|cuda\nz = 3')))
    assert [p.name for p in _mod().cuda_notebooks(tmp_path)]==['a.ipynb', 'c.ipynb']
