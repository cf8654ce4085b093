"""The audit of issue 62: what each mechanism of fastperf that replaces, copies or wraps fastai's code buys, on the task zoo.

For each mechanism and task, two Learners set up alike (`to_fastperf()`; for inference and `predict`, also as after training:
the zoo's `_warm_learner`) differ only in that mechanism, switched off in the second (`OFF` below: a stand-in taken back, or a
function of fastperf's made to decline); their speed is timed in interleaved rounds in one process and reported as the ratio
with the mechanism to without it, with a 95% interval (`ratio_interval`). Phases: training (`measure_fit` windows of the
zoo's sizes, after one untimed epoch), `get_preds` of the validation set (10 calls a round), `learn.predict` of the zoo's
item (20 calls a round) and `learn.predictor()` of it.

This measures the code as it was before the cut (commit 103b769): the mechanisms it switches off are the ones that commit has.

    python tools/audit.py MECH[,MECH...] [--rounds 7] [--tasks digits_cnn collab ...] [--phases train infer predict] [--out audit.csv]
"""
import argparse, contextlib, time, warnings, statistics, os
warnings.filterwarnings('ignore')
import numpy as np, pandas as pd, torch
import fastperf.core as fc, fastperf.pipeline as fpp, fastperf.inference as finf, fastperf.cast as fcast
from fastperf.all import *
from fastperf.core import no_bar, set_fast_dispatch, unset_learner_method
from fastperf.measure.zoo import ZOO, _warm_learner, zoo_item
from fastperf.measure.clock import interleave, ratio_interval, measure_fit

@contextlib.contextmanager
def patched(obj, name, value):
    "`obj.name` is `value` inside (a dict's key where `obj` is a dict)"
    get,put = ((obj.get, obj.__setitem__) if isinstance(obj, dict) else (lambda n: getattr(obj, n), lambda n,v: setattr(obj, n, v)))
    old = get(name); put(name, value)
    try: yield
    finally: put(name, old)

@contextlib.contextmanager
def emptied(d:dict):
    old = dict(d); d.clear()
    try: yield
    finally: d.update(old)

def _unset(*names):
    def f(learn):
        for n in names: unset_learner_method(learn, n)
    return f

def _cb_stand_in(event, fn):
    def f(learn):
        for cb in learn.cbs:
            if getattr(cb.__dict__.get(event), '__func__', None) is fn: del cb.__dict__[event]
    return f

def _no_uniform(learn):
    for dl in learn.dls.loaders:
        if getattr(dl.__dict__.get('get_idxs'), '__func__', None) is fpp._lean_weighted_idxs: del dl.__dict__['get_idxs']

def _no_lean_loop(learn):
    fi = getattr(learn, 'fast_inference', None)
    if fi is not None: fi.lean_loop = False

def _nothing(learn): pass
_null = contextlib.nullcontext

# name -> (what it is, context that is entered around the second Learner's set-up and every run of it, change made to that Learner after its set-up)
OFF = {
    'null': ("nothing: the same code on both sides (what the harness reads where nothing differs)", _null, _nothing),
    'dispatch': ("set_fast_dispatch: every per-Learner stand-in of fastperf's loop (events, batch, record, detach, loader iteration)", _null, lambda l: set_fast_dispatch(l, False)),
    'call_one': ("fast_call_one: events sent only to callbacks that handle them (with it off, the flat batch is off too)", _null, _unset('_call_one')),
    'flat': ("flat_batch/BatchPlan/send_event: a batch's events sent from one function with a plan per pass", lambda: patched(fc, 'flat_batch_ok', lambda l: False), _nothing),
    'one_batch': ("fast_one_batch: a batch on the model's device not sent again, n_inp read once a pass", _null, _unset('one_batch')),
    'events': ("fast_with_events/fast_do_one_batch (and with them the flat batch)", _null, _unset('_with_events', '_do_one_batch')),
    'record': ("lean_record/_smooth: the Recorder's after_batch and the smooth loss", _null, _cb_stand_in('after_batch', fc.lean_record)),
    'train_iter': ("lean_train_iter: TrainEvalCallback.after_batch", _null, _cb_stand_in('after_batch', fc.lean_train_iter)),
    'train_start': ("lean_train_start: TrainEvalCallback.before_fit without model.to", _null, _cb_stand_in('before_fit', fc.lean_train_start)),
    'all_batches': ("fast_all_batches/lean_iter: the loader iterated without torch's iterator", _null, lambda l: unset_learner_method(l, 'all_batches', fc.fast_all_batches)),
    'detach': ("fast_to_detach: to_detach asked once per loader, plain tensors detached directly", _null, _unset('to_detach')),
    'get_preds': ("fast_get_preds: fastai's get_preds without the reorder of a loader in order", lambda: emptied(fc._FAST_LOOPS), _nothing),
    'infer_loop': ("the lean inference loop (FastInference.lean_loop): get_preds/predict batches without their events", _null, _no_lean_loop),
    'sliced': ("sliced_batches: the lean inference loop's batches sliced from a copy of the stack", lambda: patched(finf, 'sliced_batches', lambda dl, n_cl=0: contextlib.nullcontext()), _nothing),
    'lean_pipe': ("LeanPipeline: type-dispatch plans (the fold passed over needs it: folding off too)",
                  lambda: _both(patched(fpp.LeanPipeline, '__call__', lambda self, o: self._orig(o)), patched(fpp, '_folded', lambda dl, st: None)), _nothing),
    'shortcuts': ("LeanPipeline's _SHORTCUTS: Normalize dividing in place, Categorize's tensor made directly", lambda: emptied(fpp._SHORTCUTS), _nothing),
    'pad_chunk': ("LeanPipeline's Pad_Chunk on plain tensors", lambda: patched(fpp, '_pad_chunk', lambda t, b: None), _nothing),
    'item_cache': ("the item cache (and the stacks, folds and ragged text made from it)", lambda: _both(patched(fpp, 'hold_item_cache', lambda *a, **k: None), patched(finf, 'hold_item_cache', lambda *a, **k: None)), _nothing),
    'stack': ("stacked batches (_lean_batches/_Stack, and the folds and slices of them)", lambda: patched(fpp, '_stacked', lambda dl: None), _nothing),
    'fold': ("_Folded: the stack through IntToFloatTensor/Normalize once", lambda: patched(fpp, '_folded', lambda dl, st: None), _nothing),
    'ragged': ("_Ragged: a text loader's padded batches from its items kept flat", lambda: patched(fpp, '_ragged', lambda dl: None), _nothing),
    'pad': ("_lean_pad_batches: a text loader's documents padded straight into the batch (and _Ragged)", lambda: patched(fpp, '_lean_pad_ok', lambda dl: False), _nothing),
    'tab': ("lean tabular batches: rows gathered from tensors made once", lambda: patched(fpp, '_lean_tab_ok', lambda dl: False), _nothing),
    'uniform': ("_uniform_draw: TabWeightedDL's shuffle without numpy's binary searches", _null, _no_uniform),
    'lm': ("the language model's corpus gather", lambda: patched(fpp, '_lean_lm_ok', lambda dl: False), _nothing),
    'plain_loss': ("plain_loss/_flat_call: fastai's BaseLoss computing on plain tensors", lambda: patched(fcast, 'plain_loss', lambda lf: False), _nothing),
    'tabrows': ("TabRows: learn.predictor() making a table row the model's input without a TabularPandas", lambda: patched(finf, 'tab_rows_why', lambda learn: 'off for the audit'), _nothing),
}
SETUP = { # mechanisms that are arguments of the one call: the second Learner is set up with them off
    'opt': ("TorchOptimizer: fastai's Adam/SGD update in torch's foreach/fused kernels", dict(opt=False)),
    'uint8': ("uint8_batches: images to the device as uint8", dict(uint8=False)),
    'lean': ("lean_pipelines as a whole (item cache, stacks, tabular, text, language model batches, LeanPipeline)", dict(lean=False)),
}

@contextlib.contextmanager
def _both(a, b):
    with a, b: yield

def _ctx(mech, on): return contextlib.nullcontext() if on or mech in SETUP else OFF[mech][1]()

def _fp(task, mech, on):
    l = task.make(); l.to_fastperf(verbose=False, **({} if on or mech not in SETUP else SETUP[mech][1]))
    if not on and mech in OFF: OFF[mech][2](l)
    return l

def _warm(task, mech, on):
    if mech in SETUP:
        w = task.make(); w.to_fastperf(verbose=False, **({} if on else SETUP[mech][1]))
        with no_bar(w), w.no_logging(): w.validate()
        w.to_fast_inference(verbose=False, **({} if on or mech!='lean' else dict(lean=False)))
    else: w = _warm_learner(task)
    if not on and mech in OFF: OFF[mech][2](w)
    return w

def _timed(n, f, dev=None):
    def g(r):
        t0 = time.perf_counter()
        for _ in range(n): f()
        return n/(time.perf_counter()-t0)
    return g

def measure(mech, task, phase, rounds):
    "(with/without ratio, lo, hi, medians) of `mech` on `task` in `phase`"
    lrn = {}
    for on in (True, False):
        with _ctx(mech, on):
            if phase=='train':
                l = _fp(task, mech, on)
                with no_bar(l), l.no_logging(): l.fit(1) # the zoo's untimed epoch: the item cache fills, the stacks are made
            else: l = _warm(task, mech, on)
            if phase in ('predict', 'predictor'): l._audit_item = zoo_item(task, l)
            lrn[on] = l
    def job(on):
        l = lrn[on]
        if phase=='train': f = lambda r: measure_fit(l, steps=task.steps, warmup=task.warmup if r==0 else 1)['samples_per_sec']
        elif phase=='infer': f = _timed(10, lambda: l.get_preds())
        elif phase=='predict': f = _timed(20, lambda: l.predict(l._audit_item))
        else: pr = l.predictor(); f = _timed(20, lambda: pr(l._audit_item))
        def g(r):
            with _ctx(mech, on), no_bar(l), l.no_logging(): return f(r)
        return g
    for on in (True, False): job(on)(0) # warm-up (first predict builds pipelines, ...)
    res = interleave({'with': job(True), 'without': job(False)}, rounds=rounds)
    est,lo,hi = ratio_interval(res['with'], res['without'])
    return dict(mechanism=mech, task=task.name, phase=phase, ratio=est, lo=lo, hi=hi, with_per_s=statistics.median(res['with']),
                without_per_s=statistics.median(res['without']), rounds=rounds)

def main():
    p = argparse.ArgumentParser()
    p.add_argument('mechs'); p.add_argument('--rounds', type=int, default=7)
    p.add_argument('--tasks', nargs='+', default=list(ZOO)); p.add_argument('--phases', nargs='+', default=['train','infer','predict'])
    p.add_argument('--out')
    a = p.parse_args()
    made = {n: ZOO[n]() for n in a.tasks}
    rows = []
    for mech in a.mechs.split(','):
        if mech not in OFF and mech not in SETUP: raise SystemExit(f"unknown mechanism {mech}: {sorted(OFF)+sorted(SETUP)}")
        for n,t in made.items():
            for ph in a.phases:
                if ph=='infer' and 'infer' in t.skip or ph in ('predict','predictor') and 'predict' in t.skip: continue
                try: r = measure(mech, t, ph, a.rounds)
                except Exception as e: print(f"{mech} {n} {ph}: failed {type(e).__name__}: {e}", flush=True); continue
                rows.append(r)
                print(f"{mech:11s} {n:10s} {ph:9s} {r['ratio']:.3f} [{r['lo']:.3f}-{r['hi']:.3f}]  with {r['with_per_s']:,.1f}/s  without {r['without_per_s']:,.1f}/s", flush=True)
                if a.out: pd.DataFrame(rows).to_csv(a.out, index=False, mode='w')

if __name__=='__main__': main()
