"""The audit of issue 62: what each copy of fastai's code in fastperf buys, on the task zoo.

For each mechanism and task, two Learners set up alike (`to_fastperf()`; for inference and `predict`, also as after training:
the zoo's `_warm_learner`) differ only in that mechanism, switched off in the second (`OFF` below: a method of `FastLoop` put
back to fastai's, or a function of fastperf's made to decline; `SETUP`: an argument of `to_fastperf`); their speed is timed in
interleaved rounds in one process and reported as the ratio with the mechanism to without it, with a 95% interval
(`ratio_interval`). Phases: training (`measure_fit` windows of the zoo's sizes, after one untimed epoch), `get_preds` of the
validation set (10 calls a round), `learn.predict` of the zoo's item (20 calls a round) and `learn.predictor()` of it.

The results in nbs/bench_results/audit_zen4 were measured at commit 103b769, before the cut, with this tool as it was then (the
mechanisms the cut removed had entries here too; `git show a7a4fac:tools/audit.py`). This version switches off what is left.

    python tools/audit.py MECH[,MECH...] [--rounds 7] [--tasks digits_cnn collab ...] [--phases train infer predict] [--out audit.csv]
"""
import argparse, contextlib, time, warnings, statistics
warnings.filterwarnings('ignore')
import pandas as pd
from fastai.learner import Learner
import fastperf.copies as fcp, fastperf.inference as finf
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.copies import FastLoop
from fastperf.measure.zoo import ZOO, _warm_learner, zoo_item
from fastperf.measure.clock import interleave, ratio_interval, measure_fit

@contextlib.contextmanager
def patched(obj, name, value):
    "`obj.name` is `value` inside"
    old = getattr(obj, name); setattr(obj, name, value)
    try: yield
    finally: setattr(obj, name, old)

@contextlib.contextmanager
def _both(a, b):
    with a, b: yield

def _fastai(*names):
    "`FastLoop`'s methods `names` are fastai's `Learner`'s inside"
    def f():
        cm = contextlib.ExitStack()
        for n in names: cm.enter_context(patched(FastLoop, n, getattr(Learner, n)))
        return cm
    return f

def _declines(name, value=None): return lambda: patched(fcp, name, lambda *a, **k: value)

def _no_lean_loop(learn):
    fi = getattr(learn, 'fast_inference', None)
    if fi is not None: fi.lean_loop = False

def _no_fast_loop(learn): learn._fp_fast = frozenset() # (`FastLoop` stays in the class, running fastai's code throughout)
def _nothing(learn): pass
def _fastai_cast(learn):
    "fastai's own `CastToTensor` in place of fastperf's (as fastai's defaults have it)"
    import fastai.learner
    ours = [c for c in learn.cbs if isinstance(c, CastToTensor)]
    learn.remove_cbs(ours)
    if ours and not any(type(c) is fastai.learner.CastToTensor for c in learn.cbs): learn.add_cb(fastai.learner.CastToTensor())
_null = contextlib.nullcontext
class _Unshared:
    "In place of `fastperf.copies._PLANS`: each `LeanPipeline` makes its plans anew"
    def setdefault(self, k, d): return d

# name -> (what it is, context entered around the second Learner's set-up and every run of it, change made to that Learner after its set-up)
OFF = {
    'null': ("nothing: the same code on both sides (what the harness reads where nothing differs)", _null, _nothing),
    'loop': ("FastLoop as a whole (events, batch, record, detach, loss, get_preds, the lean inference loop)", _null, _no_fast_loop),
    'call_one': ("FastLoop.__call__/_call_one: events sent only to callbacks that may handle them (and the lean record)", _fastai('__call__', '_call_one'), _nothing),
    'one_batch': ("FastLoop.one_batch: a batch on the model's device not sent again, n_inp read once a pass", _fastai('one_batch'), _nothing),
    'do_one_batch': ("FastLoop._do_one_batch: the batch's forward, loss and step (with the plain loss)", _fastai('_do_one_batch'), _nothing),
    'plain_loss': ("_flat_call: fastai's BaseLoss computing on plain tensors", lambda: patched(fcp, '_flat_call', lambda lf, inp, *t: lf(inp, *t)), _nothing),
    'record': ("_lean_record: the Recorder's after_batch and the smooth loss", _declines('_lean_record_ok', False), _nothing),
    'detach': ("FastLoop.to_detach: to_detach asked once per loader, plain tensors detached directly", _fastai('to_detach'), _nothing),
    'get_preds': ("_fast_get_preds: fastai's get_preds without the reorder of a loader in order", _declines('_in_order', False), _nothing),
    'infer_loop': ("the lean inference loop (FastInference.lean_loop): get_preds/predict batches without their events", _null, _no_lean_loop),
    'lean_pipe': ("LeanPipeline: type-dispatch plans (the fold passed over needs it: folding off too)",
                  lambda: _both(patched(fcp.LeanPipeline, '__call__', lambda self, o: self._orig(o)), _declines('_folded')()), _nothing),
    'item_cache': ("the item cache (and the stacks, folds and ragged text made from it)", lambda: _both(_declines('hold_item_cache')(), patched(finf, 'hold_item_cache', lambda *a, **k: None)), _nothing),
    'stack': ("stacked batches (_Stack, and the folds of them)", _declines('_stacked'), _nothing),
    'fold': ("_Folded: the stack through IntToFloatTensor/Normalize once", _declines('_folded'), _nothing),
    'ragged': ("_Ragged: a text loader's padded batches from its items kept flat", _declines('_ragged'), _nothing),
    'pad': ("_lean_pad_batches: a text loader's documents padded straight into the batch (and _Ragged)", _declines('_lean_pad_ok', False), _nothing),
    'probe': ("_probe: each pass of a stacked loader makes one kept item anew and compares it (a transform changed in place starts the cache anew)", _declines('_probe', True), _nothing),
    'plans': ("LeanPipeline's plans kept per transforms' list, shared by a loader's copies (DataLoader.new at each get_preds/predict)", lambda: patched(fcp, '_PLANS', _Unshared()), _nothing),
    'tab': ("lean tabular batches: rows gathered from tensors made once", _declines('_lean_tab_ok', False), _nothing),
    'lm': ("the language model's corpus gather", _declines('_lean_lm_ok', False), _nothing),
    'cast': ("fastperf's CastToTensor (the loss cast too) in place of fastai's default one", _null, _fastai_cast),
    'decode': ("Predictor: the targets decoded without decoding the input (targets_decode_ok, decode_targets)", lambda: patched(finf, 'targets_decode_ok', lambda dl, xb: False), _nothing),
    'tabrows': ("TabRows: learn.predictor() making a table row the model's input without a TabularPandas", lambda: patched(finf, 'tab_rows_why', lambda learn: 'off for the audit'), _nothing),
}
SETUP = { # mechanisms that are arguments of the one call: the second Learner is set up with them off
    'opt': ("TorchOptimizer: fastai's Adam/SGD update in torch's foreach/fused kernels", dict(opt=False), {}),
    'lean': ("lean_pipelines as a whole (item cache, stacks, tabular, text, language model batches, LeanPipeline)", dict(lean=False), dict(lean=False)),
    'skip_loss': ("FastInference's skip_loss: get_preds without with_loss computes neither the loss nor the metrics", {}, dict(skip_loss=False)),
}

def _ctx(mech, on): return contextlib.nullcontext() if on or mech in SETUP else OFF[mech][1]()

def _fp(task, mech, on):
    l = task.make(); l.to_fastperf(verbose=False, **({} if on or mech not in SETUP else SETUP[mech][1]))
    if not on and mech in OFF: OFF[mech][2](l)
    return l

def _warm(task, mech, on):
    if mech in SETUP:
        w = task.make(); w.to_fastperf(verbose=False, **({} if on else SETUP[mech][1]))
        with no_bar(w), w.no_logging(): w.validate()
        w.to_fast_inference(verbose=False, **({} if on else SETUP[mech][2]))
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
