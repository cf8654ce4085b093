"""Real multi-process DDP runs on CPU (gloo): `examples/ddp_train.py` under torchrun, and DDP asked for without accelerate."""
import json, math, os, re, socket, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT/'examples'/'ddp_train.py'
SMALL = ['--epochs', '2', '--n-train', '256', '--size', '16', '--bs', '16', '--warmup', '2']

def _free_port():
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def _run(cmd, timeout=300, stderr=False):
    env = dict(os.environ, OMP_NUM_THREADS='1', CUDA_VISIBLE_DEVICES='') # CPU processes, one thread each
    env.pop('WORLD_SIZE', None); env.pop('RANK', None); env.pop('LOCAL_RANK', None)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    assert p.returncode==0, f"exit {p.returncode}\n--- stdout\n{p.stdout[-4000:]}\n--- stderr\n{p.stderr[-6000:]}"
    return (p.stdout, p.stderr) if stderr else p.stdout

def _tagged(out, tag):
    lines = [l for l in out.splitlines() if l.startswith(tag)]
    assert len(lines)==1, f"expected the {tag!r} line printed once (rank 0 only), got {len(lines)}:\n{out[-3000:]}"
    return json.loads(lines[0][len(tag):])

def _ranks(out): return _tagged(out, 'RANKS ')

def test_ddp_two_cpu_processes(tmp_path):
    "2-process DDP fit on CPU (gloo) with CastToTensor, ChannelsLast, bf16 AutoMixedPrecision and ThroughputTimer, launched with torchrun"
    out,err = _run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_port', str(_free_port()),
                    str(EXAMPLE), *SMALL, '--amp', '--report', str(tmp_path/'report')], stderr=True)
    ranks = _ranks(out)
    assert [r['rank'] for r in ranks]==[0, 1]
    # both ranks trained: each ran its half of every epoch (256 images / 16 per batch / 2 ranks = 8 steps x 2 epochs)
    assert [r['train_iter'] for r in ranks]==[16, 16]
    assert all(r['samples']>0 for r in ranks)
    # DDP kept the replicas identical after the last optimizer step
    assert ranks[0]['params']==ranks[1]['params']
    # only rank 0 printed the report and wrote files: both ranks called timer.save, only rank 0's call wrote (two files: csv + json)
    assert out.count(' process(es), ')==1
    saved = [l for l in out.splitlines() if l.startswith('report: ')]
    assert len(saved)==1 and saved[0].endswith('(rank 0)'), saved
    assert sorted(p.name for p in tmp_path.iterdir())==['report.csv', 'report.json']
    rep = json.loads((tmp_path/'report.json').read_text())
    assert math.isclose(rep['summary']['samples_per_sec'], ranks[0]['samples_per_sec'], rel_tol=1e-12) # rank 0's own numbers
    # the global samples/s is the sum of the ranks' samples/s, and the per-rank numbers are each rank's own
    per_rank = [r['samples_per_sec'] for r in rep['ranks']]
    assert len(per_rank)==2 and all(x>0 for x in per_rank)
    assert math.isclose(rep['summary']['global_samples_per_sec'], sum(per_rank), rel_tol=1e-9)
    assert math.isclose(sum(r['samples'] for r in rep['ranks']), sum(r['samples'] for r in ranks))
    for mine,theirs in zip(rep['ranks'], ranks): assert math.isclose(mine['samples_per_sec'], theirs['samples_per_sec'], rel_tol=1e-9)
    # the saved verdict is the one from all ranks, the same distributed_report computed, and so is the global number
    dist_rep = _tagged(out, 'REPORT ')
    assert rep['verdict']==dist_rep['verdict'] and rep['verdict_from']=='all ranks' and rep['nproc']==2
    assert math.isclose(rep['summary']['global_samples_per_sec'], dist_rep['global_samples_per_sec'], rel_tol=1e-9)
    # the training table's samples/s column (rank 0 printed it) is the global one: the sum of the ranks' own last-epoch samples/s
    table,own = ranks[0]['table_samples_per_sec'],[r['last_epoch_samples_per_sec'] for r in ranks]
    from fastperf.timer import _table_value  # as the table shows a number: whole from 100 up, else 2 decimals
    assert len(table)==2 and all(a==_table_value(b) for a,b in zip(table, rep['epochs_global_samples_per_sec'])), (table, rep)
    assert all(x>0 for x in own) and table[-1]==_table_value(sum(own)), (table, own)
    # no callback attribute shadows one of the Learner's (the timer's device once did: `learn.device` is DDP's under DDP)
    assert 'shadowing an attribute' not in err, err[-3000:]
    feats = ' '.join(rep['features'])
    assert all(f in feats for f in ('cast.CastToTensor', 'ChannelsLast', 'AutoMixedPrecision', 'distributed.DDPTrainer')), feats

def test_same_script_single_process(tmp_path):
    "Without a launcher the same script trains in one process, with no DDP"
    out = _run([sys.executable, str(EXAMPLE), *SMALL, '--report', str(tmp_path/'report')])
    ranks = _ranks(out)
    assert len(ranks)==1 and ranks[0]['train_iter']==32
    rep = json.loads((tmp_path/'report.json').read_text())
    assert math.isclose(rep['summary']['samples_per_sec'], ranks[0]['samples_per_sec'])

def test_ddp_without_accelerate():
    "Importing fastperf.distributed works without accelerate and adds no stand-in for fastai's names; asking for DDP then says what to install"
    code = """
import sys; sys.modules['accelerate'] = None  # as if accelerate were not installed
import fastperf.all                             # importing fastperf works without it
import fastperf.distributed as d
import fastperf.measure.distributed as md
from fastai.learner import Learner
from fastai.data.core import DataLoaders
from torch import nn
print('FASTAI_NAMES', [n for n in ('distrib_ctx', 'to_distributed', 'detach_distributed') if hasattr(Learner, n)])
learn = Learner(DataLoaders([], []), nn.Linear(1, 1), loss_func=nn.MSELoss())
def ctx():
    with learn.ddp_ctx(): pass
for f in (ctx, lambda: d.DDPTrainer(), lambda: d.DDPDL(learn.dls.train), lambda: md.run_distributed('fastperf.measure.distributed:synthetic_learner')):
    try: f(); print('no error')
    except ImportError as e: print('ImportError:', e)
"""
    out = _run([sys.executable, '-c', code], timeout=120)
    assert 'FASTAI_NAMES []' in out, out # fastai.distributed cannot be imported without accelerate, and fastperf adds none of its names
    lines = [l for l in out.splitlines() if l.startswith(('ImportError', 'no error'))]
    assert len(lines)==4, out
    assert all(l.startswith('ImportError:') and "pip install 'fastperf[distributed]'" in l for l in lines), out

def test_import_changes_nothing_in_fastai():
    "Importing fastperf.distributed leaves fastai's DistributedTrainer, DistributedDL and distrib_ctx as they are, and registers no atexit hook"
    code = """
import atexit
import fastai.distributed as fd
from fastai.learner import Learner
snap = lambda: ({c.__name__:dict(vars(c)) for c in (fd.DistributedTrainer, fd.DistributedDL)},
                {n:vars(Learner)[n] for n in ('distrib_ctx', 'to_distributed', 'detach_distributed')}, atexit._ncallbacks())
before = snap()
import fastperf.distributed
after = snap()
print('SAME', before==after, 'DDP_CTX', 'ddp_ctx' in vars(Learner))
"""
    out = _run([sys.executable, '-c', code], timeout=120)
    assert 'SAME True DDP_CTX True' in out, out

USER_SCRIPT = """
import atexit, sys, torch
# registered first, so it runs last at exit (atexit is last-in first-out): is the process group still alive then?
atexit.register(lambda: print(f'PG_AT_EXIT rank={rank} alive={torch.distributed.is_initialized()}', flush=True))
from fastai.vision.all import *
from fastperf.all import *
from fastperf.measure.data import synthetic_dls, small_cnn
from fastperf.distributed import DDPTrainer # made on first use, not by `fastperf.all`
rank = rank_distrib()
dls = synthetic_dls(n_train=64, n_valid=32, size=16, bs=16)
learn = Learner(dls, small_cnn(dls.c), metrics=accuracy, cbs=[CastToTensor(), ChannelsLast(), ThroughputTimer(warmup=1)])
with learn.no_bar(), learn.ddp_ctx(): learn.fit(1)         # as a user writes it: no teardown of its own
print(f'TRAINED rank={rank} iters={learn.train_iter} left={[type(cb).__name__ for cb in learn.cbs if isinstance(cb, DDPTrainer)]}', flush=True)
"""

def test_ddp_exit_is_clean(tmp_path):
    "A user's torchrun script with `ddp_ctx` and no teardown of its own exits 0 on every rank, and its process group is gone before the interpreter's finalization (where gloo's threads aborted ~1 run in 12): twice"
    script = tmp_path/'train.py'
    script.write_text(USER_SCRIPT)
    for i in range(2): # (the process group's end is checked in every run; repeating runs only adds chances to see the abort it caused)
        out = _run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_port', str(_free_port()), str(script)], timeout=120)
        # (the ranks share stdout, so a line of one can start in the middle of the other's: search, not startswith)
        # both ranks trained (half of the 4 batches each), and `ddp_ctx` removed its trainer when it exited
        assert sorted(re.findall(r'TRAINED rank=\d iters=\d+ left=\[.*?\]', out))==['TRAINED rank=0 iters=2 left=[]', 'TRAINED rank=1 iters=2 left=[]'], (i, out)
        # fastperf destroyed the process group before the interpreter's finalization (its gloo threads aborted the process there)
        assert sorted(re.findall(r'PG_AT_EXIT rank=\d alive=(?:True|False)', out))==['PG_AT_EXIT rank=0 alive=False', 'PG_AT_EXIT rank=1 alive=False'], (i, out)
