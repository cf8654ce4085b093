"`fastperf-bench` end to end: each test runs the command (or `bench`) with real subprocesses, so they take minutes, not seconds"
import os, sys, shutil, subprocess, textwrap
import pandas as pd, pytest
from fastperf.bench import bench, bench_columns

def _cmd():
    exe = shutil.which('fastperf-bench')
    return [exe] if exe else [sys.executable, '-c', 'from fastperf.bench import main; main()']

def run_cli(*args, cwd=None, env=None):
    return subprocess.run(_cmd() + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, timeout=1200)

def test_quick_end_to_end(tmp_path):
    out = tmp_path/'quick'
    p = run_cli('--quick', '--out', out)
    assert p.returncode==0, p.stderr[-3000:]
    df = pd.read_csv(out/'results.csv')
    assert 'vs_vanilla' in df.columns
    assert list(df.columns)==list(bench_columns)  # the columns, in the documented order
    assert len(df)==8 and df.key.is_unique
    assert set(df.model)=={'small_cnn','tiny_vit'} and set(df.precision)=={'fp32','bf16'} and set(df.subclass)=={False,True}
    base = df[df.features=='baseline']
    assert len(base)==2 and base.error.isna().all() and base.vanilla_error.isna().all()
    assert (base.speedup==1).all() and base.vs_vanilla.notna().all()
    ok = df[df.samples_per_sec.notna() & df.vanilla_samples_per_sec.notna()]
    assert ((ok.vs_vanilla - ok.samples_per_sec/ok.vanilla_samples_per_sec).abs() < 1e-9).all()
    assert df.device.eq('cpu').all() and df.torch.notna().all() and (df.threads>=1).all()
    for f in ('results.json', 'throughput.png', 'interactions.png'): assert (out/f).exists(), f
    assert 'Results in' in p.stdout and 'vs_vanilla' in p.stdout

def test_resume_skips_done(tmp_path):
    kw = dict(models=['small_cnn'], features=['channels_last'], bs=8, steps=2, warmup=1, out=tmp_path, show_progress=False, plots=False)
    df = bench(**kw)
    assert len(df)==2 and df.samples_per_sec.notna().all()
    csv = tmp_path/'results.csv'
    pd.read_csv(csv).iloc[:1].to_csv(csv, index=False)  # as if the sweep was interrupted after its first configuration
    df2 = bench(**kw)
    assert len(df2)==2 and len(pd.read_csv(csv))==2
    assert df2.samples_per_sec[0]==df.samples_per_sec[0]  # kept, not measured again
    assert df2.samples_per_sec[1]!=df.samples_per_sec[1]  # measured again (a new timing never repeats to the last digit)
    df3 = bench(**kw)
    assert (df3.samples_per_sec==df2.samples_per_sec).all()

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
    p = run_cli('--models', 'small_cnn', 'usermodels:broken', 'usermodels:oom', '--features', 'none',
                '--bs', 8, '--steps', 2, '--warmup', 1, '--out', out, '--no-plots', cwd=tmp_path)
    assert p.returncode==0, p.stderr[-3000:]
    df = pd.read_csv(out/'results.csv').set_index('model')
    assert len(df)==3
    assert 'forced failure' in df.loc['usermodels:broken','error'] and 'forced failure' in df.loc['usermodels:broken','vanilla_error']
    assert pd.isna(df.loc['usermodels:broken','samples_per_sec'])
    assert pd.isna(df.loc['small_cnn','error']) and df.loc['small_cnn','samples_per_sec']>0  # the sweep went on
    o = df.loc['usermodels:oom']
    assert o.bs==8 and o.bs_used==4 and 'out of memory at bs=8' in o.note and pd.isna(o.error) and o.samples_per_sec>0
    assert 'forced failure' in p.stdout
    p = run_cli('--models', 'usermodels:broken', '--features', 'none', '--bs', 8, '--steps', 2, '--warmup', 1,
                '--out', tmp_path/'none', '--no-plots', cwd=tmp_path)
    assert p.returncode==1 and 'every configuration failed' in p.stderr, (p.returncode, p.stderr[-2000:])  # no number at all: a failed run
    assert 'forced failure' in pd.read_csv(tmp_path/'none'/'results.csv').error[0]

BAD = [['--models','resnet19'], ['--models','nosuchpkg.mod:fn'], ['--steps','-1'], ['--warmup','-2'], ['--features','turbo'],
       ['--precision','fp8'], ['--compile-modes','fastest'], ['--bs','0'], ['--mode','fast'], ['--device','tpu'], ['--size','abc'],
       ['--nproc','0'], ['--nproc','-1'], ['--nproc','2','--mode','infer']]

def test_bad_arguments_exit_2(tmp_path, capsys):
    from fastperf.bench import main
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

DDP_MODELS = '''
import os
from fastperf.data import small_cnn
def ddp_broken():
    "Builds in one process, fails in a DDP process"
    if int(os.environ.get('WORLD_SIZE', '1'))>1: raise RuntimeError("forced DDP failure")
    return small_cnn()
'''

def test_nproc_scaling(tmp_path):
    (tmp_path/'ddpmodels.py').write_text(DDP_MODELS)
    out = tmp_path/'ddp'
    args = ('--quick', '--nproc', 2, '--models', 'small_cnn', 'ddpmodels:ddp_broken', '--features', 'none', '--out', out, '--no-plots')
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
    assert 'scaling_efficiency' in p.stdout and 'forced DDP failure' in p.stdout
    p = run_cli(*args, cwd=tmp_path)  # resume: both rows are done, nothing runs again
    assert p.returncode==0, p.stderr[-3000:]
    df2 = pd.read_csv(out/'results.csv')
    assert len(df2)==2 and (df2.global_samples_per_sec.fillna(-1)==df.global_samples_per_sec.fillna(-1)).all()
