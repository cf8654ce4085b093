"""What each of fastperf's per-batch shortcuts is worth, side by side: zoo tasks trained with `to_fastperf()`, and with one of its
shortcuts taken away again (the lean loop: `fast_with_events`, `fast_do_one_batch`, `fast_one_batch`, `lean_record`, `lean_train_iter`; the stacked batches;
a tabular loader's rows gathered per chunk of batches, session 35; a language model's batches gathered from its corpus, session 36; the passes iterated by `lean_iter`
(`fast_all_batches`) and the Recorder's smooth loss with fewer tensor operations and checks, session 37), against the plain loop, in interleaved rounds.
Usage: python tools/lean_loop_bench.py [--tasks tabular digits_cnn] [--rounds 7] [--steps N (default: the zoo task's; cheap tasks read steadier over 150)]"""
import argparse, statistics, warnings
warnings.filterwarnings('ignore')
from fastperf.measure.zoo import ZOO, _plain_loop
from fastperf.measure.parity import learner_features
from fastperf.measure.clock import measure_fit, interleave, ratio_interval
from fastperf.core import no_bar, unset_learner_method, fast_with_events, fast_do_one_batch, fast_one_batch, lean_record, lean_train_iter, fast_all_batches, _smooth_ok
import torch
import types
from fastperf.pipeline import _lean_batches, _lean_lm_batches, _lean_tab_batches, _tab_rows, _tab_fresh, _shared_tab, _tab_tensors, _batch_idxs
import fastperf.recommend # noqa: F401 (Learner.to_fastperf)

def no_lean_loop(l):
    "`l` with fastai's `_with_events`, `_do_one_batch`, `one_batch`, `Recorder.after_batch` and `TrainEvalCallback.after_batch` back (the rest of `to_fastperf()` kept)"
    unset_learner_method(l, '_with_events', fast_with_events); unset_learner_method(l, '_do_one_batch', fast_do_one_batch); unset_learner_method(l, 'one_batch', fast_one_batch)
    for cb,fn in ((l.recorder, lean_record), (l.train_eval, lean_train_iter)):
        if getattr(cb.__dict__.get('after_batch'), '__func__', None) is fn: del cb.__dict__['after_batch']
    return l

def _record_s36(self):
    "`lean_record` as it was before session 37: the smooth loss's code checked at every batch, a 0-d loss's mean taken, its value computed twice"
    learn = self.learn
    if len(learn.yb)==0: return
    sl = self.smooth_loss
    mets = ((() if getattr(self, 'cancel_train', False) else (sl, *(self.metrics if self.train_metrics else ()))) if learn.training else self._valid_mets)
    for met in mets:
        if met is sl and _smooth_ok(sl, learn.loss): sl.count += 1; sl.val = torch.lerp(learn.loss.detach().mean().cpu(), sl.val, sl.beta)
        else: met.accumulate(learn)
    if not learn.training: return
    self.lrs.append(learn.opt.hypers[-1]['lr'])
    self.losses.append(sl.value); learn.smooth_loss = sl.value

def record_s36(l):
    "`l` with session 36's record of a batch (the rest of `to_fastperf()` kept)"
    l.recorder.after_batch = types.MethodType(_record_s36, l.recorder); return l

def fastai_iteration(l):
    "`l` with fastai's `all_batches` back: each pass through torch's iterator (the rest of `to_fastperf()` kept)"
    unset_learner_method(l, 'all_batches', fast_all_batches); return l

def _made_by(l, fn):
    "The loaders of `l` whose batches fastperf's `fn` makes (their `create_batches`)"
    return [dl for dl in l.dls.loaders if getattr(dl.__dict__.get('create_batches'), '__func__', None) is fn]

def fastai_batches(l, fn):
    "`l` with fastai's `create_batches` back on the loaders whose batches `fn` made (the rest of `to_fastperf()` kept: items still from the item cache)"
    for dl in _made_by(l, fn): del dl.__dict__['create_batches']
    return l

def _tab_per_batch(self, samps):
    "`_lean_tab_batches` as it was before session 35: one gather per tensor per batch"
    to,st = self.dataset,self.__dict__.get('_fp_tab')
    if not _tab_fresh(st, to): st = self._fp_tab = _shared_tab(to) or (to.items, to.items.shape, _tab_tensors(to))
    for i in _batch_idxs(self, samps): yield tuple([_tab_rows(t, cm, i) for t,cm in st[2]])

def no_chunks(l):
    "`l` with its tabular loaders' rows gathered batch by batch (the rest of `to_fastperf()` kept)"
    for dl in _made_by(l, _lean_tab_batches): dl.create_batches = types.MethodType(_tab_per_batch, dl)
    return l

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--tasks', nargs='+', default=['tabular', 'digits_cnn']); p.add_argument('--rounds', type=int, default=7); p.add_argument('--steps', type=int, default=None)
    a = p.parse_args()
    for name in a.tasks:
        task = ZOO[name]()
        def fp(): l = task.make(); l.to_fastperf(verbose=False); return l
        ls = {'to_fastperf()': fp(), 'without the lean loop': no_lean_loop(fp()), "fastai's iteration": fastai_iteration(fp()), 'the record of session 36': record_s36(fp())}
        steps = a.steps or task.steps
        fp0 = ls['to_fastperf()']
        if _made_by(fp0, _lean_batches): ls['without stacked batches'] = fastai_batches(fp(), _lean_batches)
        if _made_by(fp0, _lean_tab_batches): ls['tabular rows per batch'] = no_chunks(fp())
        if _made_by(fp0, _lean_lm_batches): ls["fastai's LM batches"] = fastai_batches(fp(), _lean_lm_batches)
        pl = _plain_loop(task, task.make(), learner_features(ls['to_fastperf()']), task.warmup+steps, 0)
        def fit(l):
            def f(r):
                with no_bar(l), l.no_logging(): return measure_fit(l, steps=steps, warmup=task.warmup if r==0 else 1)['samples_per_sec']
            return f
        jobs = {k:fit(l) for k,l in ls.items()}
        jobs['plain loop'] = lambda r: pl.measure(steps=steps, warmup=task.warmup if r==0 else 1)['samples_per_sec']
        for k in ls: jobs[k](0) # a first fit each (the item cache fills, the stack is made), outside the rounds
        res = interleave(jobs, rounds=a.rounds)
        for k in ls:
            f,lo,hi = ratio_interval(res['to_fastperf()'], res[k]) if k!='to_fastperf()' else ratio_interval(res[k], res['plain loop'])
            what = 'to_fastperf() vs plain loop' if k=='to_fastperf()' else f'to_fastperf() vs {k}'
            print(f"{name:<11} {k:<24} {statistics.median(res[k]):>9,.0f}/s   {what}: {f:.2f} [{lo:.2f}-{hi:.2f}]")
        print(f"{name:<11} {'plain loop':<24} {statistics.median(res['plain loop']):>9,.0f}/s")

if __name__=='__main__': main()
