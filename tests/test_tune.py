"`learn.tune_fastperf()` as users run it: the installed package in fresh processes, a tiny model and budget, a cache file in tmp."
import json, os, subprocess, sys

SCRIPT = r'''
import sys, json, torch
from fastai.vision.all import *
import fastperf.tune as ft
from fastperf.measure.data import synthetic_dls, small_cnn
if sys.argv[2]=='no-trials': # the second process: any trial is a failure
    def _fail(*a, **k): raise AssertionError("trials ran although the decision was cached")
    ft.tune_training = ft.tune_inference = _fail
set_seed(0)
dls = synthetic_dls(n_train=64, n_valid=16, size=16, bs=16, num_workers=0)
learn = Learner(dls, small_cnn())
with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-3)
sd = {k:v.clone() for k,v in learn.model.state_dict().items()}
ost = [{k:(v.clone() if isinstance(v, torch.Tensor) else v) for k,v in s.items()} for s in learn.opt.state_dict()['state']]
learn.tune_fastperf(budget=8, steps=2, rounds=1, cache=sys.argv[1], apply=False)
same_w = all(torch.equal(v, sd[k]) for k,v in learn.model.state_dict().items())
same_o = all(all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k]==b[k] for k in a)
             for a,b in zip(learn.opt.state_dict()['state'], ost))
r = learn.tune_result
print('RESULT ' + json.dumps(dict(cached=r['cached'], same_weights=same_w, same_opt=same_o, choice=r['train_choice'],
                                  rows=len(r['train_table']))))
'''

def _run(cache, mode):
    r = subprocess.run([sys.executable, '-c', SCRIPT, str(cache), mode], capture_output=True, text=True, timeout=120)
    assert r.returncode==0, r.stdout[-3000:]+r.stderr[-3000:]
    res = json.loads(next(l for l in r.stdout.splitlines() if l.startswith('RESULT '))[7:])
    return r.stdout,res

def test_tune_cache_roundtrip(tmp_path):
    cache = tmp_path/'sub'/'tune.json'
    out,res = _run(cache, 'trials')
    assert cache.exists() and len(json.loads(cache.read_text()))==1
    assert not res['cached'] and res['same_weights'] and res['same_opt'] and res['rows']>=3
    assert 'fastai as is' in out and 'img_s' in out and 'warmup_s' in out and 'tune_fastperf: chose' in out # the table it decided from
    out2,res2 = _run(cache, 'no-trials')
    assert res2['cached'] and res2['choice']==res['choice'] and res2['same_weights'] and res2['same_opt']
    assert 'reusing the decision cached in' in out2 and 'img_s' not in out2

def test_tune_cache_env(tmp_path):
    "`$FASTPERF_TUNE_CACHE` moves the default cache file"
    p = tmp_path/'env.json'
    code = "import os; from fastperf.tune import default_cache_path; print(default_cache_path())"
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env={**os.environ, 'FASTPERF_TUNE_CACHE': str(p)})
    assert r.stdout.strip()==str(p)

