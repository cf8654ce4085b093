"`fastperf-bench`: statistics and formatting as unit tests (no subprocess), then the command end to end with tiny sweeps"
import os, re, sys, json, math, time, signal, shutil, subprocess
from pathlib import Path
import numpy as np, pandas as pd, pytest
from scipy import stats
from fastperf.measure.bench import bench, bench_columns, format_table, summary, compare_runs, _add_speedups
from fastperf.measure.clock import ratio_interval, distinguishable, rotated


def _default_sigint():
    "In the child: SIGINT's default disposition, which a shell's background job ignores (Python then installs no KeyboardInterrupt handler)"
    signal.signal(signal.SIGINT, signal.SIG_DFL)

def _cmd():
    exe = shutil.which('fastperf-bench')
    return [exe] if exe else [sys.executable, '-c', 'from fastperf.cli import bench; bench()']

def run_cli(*args, cwd=None, env=None):
    "The installed command with stdout and stderr to pipes (not a terminal), as in CI or `> log`"
    return subprocess.run(_cmd() + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, timeout=1200)

TINY = ('--bs', 8, '--size', 16, '--steps', 2, '--warmup', 1, '--min-rounds', 2, '--budget', 1)

# --- statistics: synthetic rounds, checked against a hand computation ---

def test_ratio_interval_paired_matches_t_interval():
    a,b = np.array([110., 121, 99, 105, 130]),np.array([100., 110, 92, 100, 118])
    d = np.log(a/b); h = stats.t.ppf(0.975, 4)*d.std(ddof=1)/math.sqrt(5)
    est,lo,hi = ratio_interval(a, b)
    assert est==pytest.approx(math.exp(d.mean())) and lo==pytest.approx(math.exp(d.mean()-h)) and hi==pytest.approx(math.exp(d.mean()+h))
    assert est==pytest.approx(np.exp(np.log(a).mean())/np.exp(np.log(b).mean()))  # paired: the ratio of the geometric means

def test_ratio_interval_drift_paired_vs_unpaired():
    drift = np.linspace(1, 0.6, 8)  # the machine slows down 40% over the rounds, for both alike
    base,fast = 100*drift,108*drift*np.array([1, 1.01, .99, 1, 1.01, .99, 1, 1])
    est,lo,hi = ratio_interval(fast, base)
    assert est==pytest.approx(1.08, rel=0.01) and 1<lo<1.08<hi and distinguishable(lo, hi)
    est,lo,hi = ratio_interval(fast, base, paired=False)  # the same numbers as independent samples: the drift swamps the effect
    assert lo<1<hi and not distinguishable(lo, hi)

def test_ratio_interval_edge_cases():
    assert ratio_interval([5., 5, 5]) == pytest.approx((5.0, 5.0, 5.0))
    est,lo,hi = ratio_interval([7.])
    assert est==pytest.approx(7) and math.isnan(lo) and math.isnan(hi)
    with pytest.raises(ValueError, match='as many rounds'): ratio_interval([1., 2], [1.])

def test_distinguishable():
    assert distinguishable(1.01, 1.2) and distinguishable(0.8, 0.99)
    assert not distinguishable(0.99, 1.01) and not distinguishable(1.0, 1.3) and not distinguishable(math.nan, 1.2)

def _row(features, fa, va, run='r1', **kw):
    r = {k:None for k in bench_columns}
    r.update(key=f"k-{features}", model='m', mode='train', bs=32, size=64, steps=5, warmup=2, device='cpu', features=features, run_id=run,
             round_samples_per_sec=' '.join(map(str, fa)), vanilla_round_samples_per_sec=' '.join(map(str, va)), rounds=len(fa), bs_used=32, **kw)
    for pre,x in (('',fa), ('vanilla_',va)): r[pre+'samples_per_sec'],r[pre+'samples_per_sec_lo'],r[pre+'samples_per_sec_hi'] = ratio_interval(x)
    return r

def _sweep():
    n = np.array([1, 1.004, .997, 1.002, .998])
    return _add_speedups(pd.DataFrame([_row('baseline', 24400.4*n, 31000*n[::-1]), _row('bf16', 36600*n[::-1], 37000*n),
                                       _row('subclass', [21000, 26000, 24000, 25500, 23000], 31100*n)], columns=list(bench_columns)))

def test_flags_distinct_and_unstable():
    df = _sweep()
    assert df.speedup.tolist()[0]==1.0 and df.speedup_distinct.tolist()==[False, True, False]
    assert df.vs_vanilla_distinct[1] and df.vs_vanilla_hi[1]<1  # fastai 1% slower, measured steadily: distinguishable
    assert df.unstable.tolist()==[False, False, True]  # subclass's windows spread by 20%: a re-run may land >5% away
    # rows of different runs: compared unpaired, so wider
    other = _add_speedups(pd.concat([df.iloc[:1], df.iloc[1:2].assign(run_id='r2')]))
    x,y = [[float(v) for v in df[k][i].split()] for k,i in (('round_samples_per_sec',1), ('round_samples_per_sec',0))]
    assert (other.speedup[1],other.speedup_lo[1],other.speedup_hi[1])==pytest.approx(ratio_interval(x, y, paired=False))
    assert ratio_interval(x, y, paired=False)!=pytest.approx(ratio_interval(x, y))

def test_table_and_summary_plain():
    df = _sweep()
    t = format_table(df)
    assert not re.search(r'\de[+-]?\d', t) and ' 24405 ' in t and ' 36607 ' in t  # whole samples/s, no scientific notation
    lines = t.splitlines()
    assert lines[0].split()[:4]==['model','mode','bs','features'] and len(lines)==4
    assert 'faster' in lines[2] and 'unclear' in lines[3] and 'reference' in lines[1]
    s = summary(df)
    assert 'bf16 1.50' in s and 'Not distinguishable from 1.0: subclass' in s and 'subclass 0.' not in s and '1 row(s) unstable' in s

def test_compare_runs():
    a = _sweep(); b = a.copy(); b['speedup'] *= [1, 1.06, 1.2]
    c = compare_runs(a, b)
    assert c['within_5%'].tolist()==[True, False, False] and c.reproduced.tolist()==[True, False, True]  # row 3 is flagged unstable

def test_rotation():
    slots = [f"s{i}" for i in range(6)]
    orders = [rotated(slots, r, stride=len(slots)//3) for r in range(3)]
    assert all(sorted(o)==slots for o in orders)
    assert [o[0] for o in orders]==['s0','s2','s4']

# --- the command, end to end (real worker processes; tiny models, 2 rounds) ---

def test_cli_to_file_interleaved(tmp_path):
    out = tmp_path/'run'
    p = run_cli('--models', 'small_cnn', '--features', 'channels_last', *TINY, '--out', out)
    assert p.returncode==0, p.stderr[-3000:]
    assert 'Warning' not in p.stderr, p.stderr[-2000:] # a user's first line is the tool's: no deprecation warning from importing fastai
    df = pd.read_csv(out/'results.csv')
    assert list(df.columns)==list(bench_columns) and len(df)==2 and df.error.isna().all() and df.vanilla_error.isna().all()
    assert (df.rounds==2).all() and df.speedup[0]==1 and df.optimizer.str.contains('AdamW').all()
    runs = json.loads((out/'results.json').read_text())['runs']
    assert (df.seconds>0).all() and df.seconds.sum()<=runs[0]['seconds'], (df.seconds, runs[0]['seconds'])  # each row's wall time, within the run's
    for k in ('speedup','vs_vanilla'): assert (df[k+'_lo']<=df[k]).all() and (df[k]<=df[k+'_hi']).all()
    assert ((df.vs_vanilla - df.samples_per_sec/df.vanilla_samples_per_sec).abs() < 1e-6*df.vs_vanilla).all()
    sched = runs[0]['schedule'][0]['rounds']
    assert sched[0]==['baseline/fastai','baseline/vanilla','channels_last/fastai','channels_last/vanilla']
    assert sched[1]==['channels_last/fastai','channels_last/vanilla','baseline/fastai','baseline/vanilla']  # rotated
    lines = p.stdout.splitlines()
    done = [l for l in lines if l.startswith('[')]  # not a terminal: one line per finished configuration, no progress bar
    assert len(done)==2 and done[0].startswith('[1/2] small_cnn train bs=8 baseline: fastai ') and 'samples/s' in done[0]
    assert not any('\r' in l or '|' in l and '%' in l for l in lines)
    head = [i for i,l in enumerate(lines) if l.split()[:4]==['model','mode','bs','features']]
    assert len(head)==1 and lines[head[0]].lstrip().startswith('model')  # the header on its own line
    table = lines[head[0]:head[0]+3]
    assert not any(re.search(r'\de[+-]?\d', l) for l in table) and 'Optimizer: torch AdamW' in p.stdout
    assert (out/'throughput.png').exists() and (out/'interactions.png').exists() and runs[0]['measured']==2
    p = run_cli('--models', 'small_cnn', '--features', 'channels_last', *TINY, '--out', out, '--no-plots') # the same command again: nothing to measure
    assert p.returncode==0, p.stderr[-3000:]
    runs2 = json.loads((out/'results.json').read_text())['runs'] # the first run's record stays; the second measured nothing
    assert len(runs2)==2 and runs2[0]==runs[0] and runs2[1]['schedule']==[] and runs2[1]['measured']==0
    assert pd.read_csv(out/'results.csv').samples_per_sec.tolist()==df.samples_per_sec.tolist()
    # (resuming, a finished configuration kept and the missing one measured in a new run: test_interrupt)

USER_MODELS = '''
import torch
from torch import nn
def broken(): raise RuntimeError("forced failure in the user's model")
class _Oom(nn.Module):
    "Raises out-of-memory for batches above 4, as a GPU would"
    def __init__(self): super().__init__(); self.lin = nn.Linear(3, 10)
    def forward(self, x):
        if x.shape[0]>4: raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        return self.lin(x.mean((2,3)))
def oom(): return _Oom()
'''

def test_failures_become_rows(tmp_path):
    (tmp_path/'usermodels.py').write_text(USER_MODELS)
    out = tmp_path/'out'
    p = run_cli('--models', 'usermodels:broken', 'usermodels:oom', '--features', 'none', *TINY, '--out', out, '--no-plots', cwd=tmp_path)
    assert p.returncode==0, p.stderr[-3000:]
    df = pd.read_csv(out/'results.csv').set_index('model')
    assert len(df)==2
    assert 'forced failure' in df.loc['usermodels:broken','error'] and 'forced failure' in df.loc['usermodels:broken','vanilla_error']
    assert pd.isna(df.loc['usermodels:broken','samples_per_sec'])
    o = df.loc['usermodels:oom']  # the sweep went on, and halved the batch size for the model that ran out of memory
    assert o.bs==8 and o.bs_used==4 and 'out of memory at bs=8' in o.note and pd.isna(o.error) and o.samples_per_sec>0
    assert 'forced failure' in p.stdout and 'usermodels:broken train bs=8 baseline: failed' in p.stdout
    p = run_cli('--models', 'usermodels:broken', '--features', 'none', *TINY, '--out', tmp_path/'none', '--no-plots', cwd=tmp_path)
    assert p.returncode==1 and 'every configuration failed' in p.stderr, (p.returncode, p.stderr[-2000:])  # no number at all: a failed run
    assert 'forced failure' in pd.read_csv(tmp_path/'none'/'results.csv').error[0]

BAD = [['--models','resnet19'], ['--models','nosuchpkg.mod:fn'], ['--steps','-1'], ['--warmup','-2'], ['--features','turbo'],
       ['--precision','fp8'], ['--compile-modes','fastest'], ['--bs','0'], ['--mode','fast'], ['--device','tpu'], ['--size','abc'],
       ['--nproc','0'], ['--nproc','-1'], ['--nproc','2','--mode','infer'], ['--budget','0'], ['--min-rounds','1'],
       *[a+['--models','small_cnn','--features','none',*map(str, TINY)] for a in (  # a tiny sweep, should one of them be let through
         ['--timeout','inf'], ['--timeout','nan'], ['--timeout','0'], ['--mode','infer','--accuracy','2'], ['--mode','infer','--accuracy'],
         ['--device','mps'], ['--device','xpu'])]]  # no mps or xpu on the machines these tests run on

def test_bad_arguments_exit_2(tmp_path, capsys):
    from fastperf.measure.bench import main
    for args in BAD:
        out = tmp_path/'never'
        with pytest.raises(SystemExit) as e: main(args + ['--out', str(out)])
        assert e.value.code==2, args
        err = [l for l in capsys.readouterr().err.splitlines() if l.startswith('fastperf-bench: error:')]
        assert len(err)==1, (args, err)
        assert not out.exists()  # nothing ran
    p = run_cli('--models', 'resnet19', '--out', tmp_path/'never')  # the installed command, once
    assert p.returncode==2 and 'fastperf-bench: error: unknown model' in p.stderr, p.stderr[-2000:]
    assert not (tmp_path/'never').exists()

def test_out_not_a_folder(tmp_path, capsys):
    "An --out that is a file (or cannot be made) is an error line before the sweep, not a traceback after the workers started"
    from fastperf.measure.bench import main
    f = tmp_path/'a_file'; f.write_text('x')
    with pytest.raises(SystemExit) as e: main(['--quick', '--out', str(f)])
    assert e.value.code==2
    assert [l for l in capsys.readouterr().err.splitlines() if l.startswith(f'fastperf-bench: error: --out {f}')]

def test_out_not_writable(tmp_path, capsys):
    "An --out folder that exists but where the results cannot be written: an error line before measuring, not an OSError after"
    from fastperf.measure.bench import main
    bad = tmp_path/'bad'; (bad/'results.csv').mkdir(parents=True)  # results.csv cannot be written, not even by root
    outs = [bad, Path('/sys')]  # sysfs: no new files, not even for root (chmod would not stop root)
    if os.geteuid()!=0: ro = tmp_path/'ro'; ro.mkdir(); ro.chmod(0o555); outs.append(ro)
    for out in outs:
        t = time.perf_counter()
        with pytest.raises(SystemExit) as e: main(['--models', 'small_cnn', '--features', 'none', *map(str, TINY), '--no-plots', '--out', str(out)])
        assert e.value.code==2 and time.perf_counter()-t<10, out  # before any worker started
        err = [l for l in capsys.readouterr().err.splitlines() if l.startswith(f'fastperf-bench: error: --out {out}: cannot write there')]
        assert len(err)==1, out
    assert not [f for f in (tmp_path/'bad').iterdir() if f.name!='results.csv']  # the probe file was deleted

def _children(pid):
    "Processes whose parent is `pid`"
    res = []
    for d in Path('/proc').iterdir():
        try:
            if d.name.isdigit() and int((d/'stat').read_text().rsplit(')', 1)[1].split()[1])==pid: res.append(int(d.name))
        except (OSError, IndexError, ValueError): pass
    return res

def _alive(pid):
    try: return (Path('/proc')/str(pid)/'stat').read_text().rsplit(')', 1)[1].split()[0]!='Z'
    except OSError: return False

def test_interrupt(tmp_path):
    "Ctrl-C: the workers stop, one line says what was saved, exit code 130; the same command again resumes"
    out = tmp_path/'int'
    args = ['--models', 'small_cnn', 'tiny_vit', '--features', 'none', *TINY, '--out', out, '--no-plots']
    p = subprocess.Popen(_cmd() + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)
    try:
        for l in p.stdout:  # small_cnn's group finishes and is saved, then tiny_vit's workers start
            if l.startswith('tiny_vit train'): break
        time.sleep(2)
        kids = _children(p.pid)
        assert len(kids)==2, kids  # tiny_vit's two workers
        p.send_signal(signal.SIGINT)
        rest,err = p.communicate(timeout=60)
    finally:
        if p.poll() is None: p.kill()
    assert p.returncode==130, (p.returncode, err[-3000:])
    assert 'Traceback' not in err and err.strip().splitlines()[-1]==(
        f"fastperf-bench: interrupted; 1 configuration(s) saved in {out/'results.csv'}; run the same command again to resume"), err[-3000:]
    assert not [k for k in kids if _alive(k)]  # the workers were stopped, not left to finish
    assert pd.read_csv(out/'results.csv').model.tolist()==['small_cnn']
    run = json.loads((out/'results.json').read_text())['runs'][-1]
    assert run['interrupted'] and len(run['schedule'])==1
    p = run_cli(*args) # resume: the finished configuration is kept, the missing one is measured in a new run
    assert p.returncode==0, p.stderr[-3000:]
    df = pd.read_csv(out/'results.csv')
    assert df.model.tolist()==['small_cnn', 'tiny_vit'] and df.run_id[0]!=df.run_id[1]
    runs2 = json.loads((out/'results.json').read_text())['runs'] # the first run's record is kept, the resumed run's added
    assert len(runs2)==2 and runs2[0]==run and len(runs2[1]['schedule'])==1 and runs2[1]['measured']==1

DDP_MODELS = '''
import os
from fastperf.measure.data import small_cnn
def ddp_broken():
    "Builds in one process, fails in a DDP process"
    if int(os.environ.get('WORLD_SIZE', '1'))>1: raise RuntimeError("forced DDP failure")
    return small_cnn()
'''

def test_nproc_scaling(tmp_path):
    (tmp_path/'ddpmodels.py').write_text(DDP_MODELS)
    out = tmp_path/'ddp'
    args = ('--nproc', 2, '--models', 'small_cnn', 'ddpmodels:ddp_broken', '--features', 'none', *TINY, '--out', out, '--no-plots')
    p = run_cli(*args, cwd=tmp_path)
    assert p.returncode==0, p.stderr[-3000:]
    df = pd.read_csv(out/'results.csv')
    assert list(df.columns)==list(bench_columns) and len(df)==2
    r = df.set_index('model').loc['small_cnn']
    assert pd.isna(r.ddp_error) and pd.isna(r.error), (r.ddp_error, r.error)
    assert r.nproc==2 and r.ddp_backend=='gloo' and r.ddp_threads>=1 and r.key.endswith('|nproc=2')
    assert r.single_samples_per_sec>0 and r.global_samples_per_sec>0
    assert 0 < r.scaling_efficiency <= 1.5, r.scaling_efficiency
    assert abs(r.scaling_efficiency - r.global_samples_per_sec/(2*r.single_samples_per_sec)) < 1e-9
    b = df.set_index('model').loc['ddpmodels:ddp_broken']  # the DDP run failed: an error row, the single-process loops still measured
    assert 'forced DDP failure' in b.ddp_error and pd.isna(b.global_samples_per_sec) and b.samples_per_sec>0
    assert 'scaling' in p.stdout and 'forced DDP failure' in p.stdout # (resuming: test_interrupt)

def test_version():
    "Each command says its version (`--version`), and fastperf-parity's every option has help text"
    from fastperf import __version__
    for exe in ('fastperf-bench', 'fastperf-parity', 'fastperf-zoo', 'fastperf-images'):
        p = subprocess.run([shutil.which(exe), '--version'], capture_output=True, text=True, timeout=300)
        assert p.returncode==0 and p.stdout.strip()==f'{exe} {__version__}', (exe, p.stdout, p.stderr[-2000:])
    from fastperf.measure.parity import _parser
    assert all(a.help for a in _parser()._actions), [a.dest for a in _parser()._actions if not a.help]
