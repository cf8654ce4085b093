"""A/B of one inference shortcut: `get_preds` over the validation set on zoo Learners set up as after training with fastperf
(`_warm_learner`), with the shortcut and without it, interleaved in one process (session 28).
  loop:   `FastInference`'s lean loop against fastai's loop (`lean_loop=False`); also says which loop ran
  detach: `fast_to_detach`'s direct detach of plain tensors against fastai's `to_detach` for every call
  reorder: `fast_get_preds` (the reorder's indices through NumPy) against fastai's `get_preds` (session 29)
  order:  `fast_get_preds` without the reorder of a loader `_in_order` against `fast_get_preds` with it (session 30)
  attrs:  `loaders_of` and `lean_iter` without asking a `DataLoader` for attributes it lacks, against the code before them (session 30)
  types:  stacked batches typed without fastai's `retain_types` (`_Stack.types`), the item cache's `fresh` from two lists and `on_model_device`
          reading devices without `__torch_function__`, against the code before them (session 31)
  sliced: the lean loop's batches sliced from a channels-last copy of the stack (`sliced_batches`) against gathered ones (session 31)
  tabchunk: a loader in order (`get_preds`') gathering its rows a chunk of batches at a time, as a shuffled tabular loader does (`_tab_batches`),
          against fastperf's gather per batch for it (session 35)
  cpuflags: the CPU's flags read once a process (`cpu_has_bf16`, which `AutoMixedPrecision.before_fit` asks every loop) against a read of
          /proc/cpuinfo each time (session 35)
  calls:  what an inference loop's start costs less since session 37: the datasets' pipelines found without fastai's attribute delegation
          (`_own_attr`), `lean_train_start` sending the loss to the device only where it is not there and asking for the default device only
          where the loaders have none, and `lean_iter` handing a batch already on the loader's device on without `to_device`; against the code before
  ragged: a text loader's padded batches gathered from its items kept flat (`_Ragged`) against padded from the items per batch (session 37)
  range:  `lean_iter` giving a loader in order (`_in_order`) its indices as a range, read by `_batch_idxs` as one `arange`, against fastai's
          `get_idxs` list read through NumPy (session 38)
  slices: a stacked loader whose inputs the lean loop leaves in fastai's layout sliced from a copy of its stack too, against gathered (before
          session 38 only a loader whose inputs the loop makes channels-last was sliced)
  pass:   the lean loop finding the model's device and what detaches a batch's prediction and targets once per loop (`model_batch_device`,
          `pass_detach`), against asking at each batch (`on_model_device`, `learn.to_detach`: before session 39)
  null:   no shortcut, the same code on both sides: what the harness reads where nothing differs (session 32, 21 rounds each:
          tabular `get_preds` 0.996x [0.930-1.066], `predict` 1.023x [0.927-1.130], digits CNN `get_preds` 1.013x [0.960-1.070];
          an A/B whose change never ran in `predict` read 1.058x [1.000-1.119]: a gain of a few percent needs repeating)
Usage: python tools/infer_ab_bench.py {loop,detach,reorder,order,attrs,types,sliced,tabchunk,cpuflags,calls,ragged,range,slices,pass,null} ROUNDS TASK[:N]... [--call preds|input|predict]
  TASK:N: a zoo task whose maker takes `n` (tabular, text, unet, collab, lm), made with `n=N` (`collab:200000`: 157 validation batches)
  --call: what each round calls 10 times: `get_preds` (default), `get_preds(with_input=True)`, or `predict` of the first validation item (session 29)"""
import sys, time, warnings; warnings.filterwarnings('ignore')
import torch
import fastai.data.load as _fdl
import fastperf.core as fc, fastperf.pipeline as fpp, fastperf.images as fim, fastperf.inference as finf
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.zoo import ZOO, _warm_learner, _first_item
from fastperf.measure.clock import interleave, ratio_interval

args = sys.argv[1:]
call = 'preds'
if '--call' in args: i = args.index('--call'); call = args[i+1]; del args[i:i+2]
what,rounds = args[0],int(args[1])
plain_detach,fast_loops,in_order = fc._plain_detach,dict(fc._FAST_LOOPS),fc._in_order
loaders_of,lean_iter = fc.loaders_of,finf.lean_iter
def old_loaders_of(dls, default=None): return getattr(dls, 'loaders', [dls] if default is None else default) # (before session 30)
def old_lean_iter(dl): # (before session 30: fastai's `hasattr(dl, 'it')` at the end)
    dl.randomize(); dl.before_iter(); dl._DataLoader__idxs = dl.get_idxs(); torch.empty((), dtype=torch.int64).random_()
    for b in dl.create_batches(dl.sample()):
        if dl.device is not None: b = _fdl.to_device(b, dl.device)
        yield dl.after_batch(b)
    dl.after_iter()
    if hasattr(dl, 'it'): del(dl.it)
from fasttransform.cast import retain_types
stack_batch,fresh,on_model_device = fpp._Stack.batch,fpp._ItemCache.fresh,fc.on_model_device
def old_stack_batch(self, i): # (before session 31)
    with fpp._no_tf(): b = tuple([f.index_select(0, i) for f in self.fields])
    b = retain_types(b, self.proto)
    return b if self.cls is None else self.cls(b)
def old_fresh(self): # (before session 31: a walk over the items)
    if not self.ok: return False
    with fpp._no_tf():
        if all(t._version==n for _,ts,v,_ in self.items.values() for t,n in zip(ts, v)): return True
    self._end(); return False
def old_on_model_device(b, model): # (before session 31: devices read through `__torch_function__`)
    p = fc.first_param(model)
    if p is None or type(b) is not tuple or (fc.defaults.use_cuda==False and p.device.type!='cpu'): return False
    return all(isinstance(x, torch.Tensor) and x.device==p.device for x in b)
batch_on,model_batch_device,pass_detach = finf.batch_on,finf.model_batch_device,finf.pass_detach
def old_batch_on(b, dev): # (before session 31: devices read through `__torch_function__`)
    if dev is None or type(b) is not tuple: return False
    return all(isinstance(x, torch.Tensor) and x.device==dev for x in b)
import contextlib
sliced_batches = finf.sliced_batches
def no_slices(dl, n_cl=0): return contextlib.nullcontext()
lean_tab_batches = fpp._lean_tab_batches
def chunked_tab_batches(self, samps): # every tabular loader's rows a chunk at a time, as a shuffled loader's
    to,st = self.dataset,self.__dict__.get('_fp_tab')
    if not fpp._tab_fresh(st, to): st = self._fp_tab = fpp._shared_tab(to) or (to.items, to.items.shape, fpp._tab_tensors(to))
    yield from fpp._tab_batches(st[2], fpp._batch_idxs(self, samps))
chunked_tab_batches.__name__ = 'create_batches'
import fastperf.precision as fprec
cpu_has_bf16 = fprec.cpu_has_bf16
def read_cpu_has_bf16(): # (before session 35: /proc/cpuinfo read at each call)
    with open('/proc/cpuinfo') as f:
        for l in f:
            if l.startswith('flags'): return bool({'avx512_bf16', 'amx_bf16'} & set(l.split(':',1)[1].split()))
    return False
pipelines_now,train_start_now,ragged = fpp._pipelines,fc.lean_train_start,fpp._ragged
def old_pipelines(dls): # (before session 37: the datasets' `tls` and `tfms` asked through fastai's attribute delegation)
    for dl in fc.loaders_of(dls):
        for nm in ('after_item','before_batch','after_batch'):
            if isinstance(getattr(dl, nm, None), fpp.Pipeline): yield dl,nm
        ds = getattr(dl, 'dataset', None)
        for tl in getattr(ds, 'tls', [ds]):
            if isinstance(getattr(tl, 'tfms', None), fpp.Pipeline): yield tl,'tfms'
def old_train_start(self): # (before session 37)
    self.learn.epoch,self.learn.loss = 0,fc.tensor(0.)
    self.learn.train_iter,self.learn.pct_train = 0,0.
    device = getattr(self.dls, 'device', fc.default_device())
    if not fc.model_on(self.model, device): self.model.to(device)
    if isinstance(self.loss_func, (fc.nn.Module, fc.BaseLoss)): self.loss_func.to(device)
    if hasattr(self.model, 'reset'): self.model.reset()
def lean_iter_s36(dl): # (before session 37: every batch through `to_device`)
    dl.randomize(); dl.before_iter(); dl._DataLoader__idxs = dl.get_idxs(); torch.empty((), dtype=torch.int64).random_()
    for b in dl.create_batches(dl.sample()):
        if dl.device is not None: b = _fdl.to_device(b, dl.device)
        yield dl.after_batch(b)
    dl.after_iter(); dl.__dict__.pop('it', None)
def lean_iter_s37(dl): # (before session 38: every loader's indices from its `get_idxs`)
    dl.randomize(); dl.before_iter(); dl._DataLoader__idxs = dl.get_idxs(); torch.empty((), dtype=torch.int64).random_()
    dev = None if dl.device is None else torch.device(dl.device)
    for b in dl.create_batches(dl.sample()):
        if dev is not None and not fc._there(b, dev): b = _fdl.to_device(b, dl.device)
        yield dl.after_batch(b)
    dl.after_iter(); dl.__dict__.pop('it', None)
def cl_slices_only(dl, n_cl=0): return sliced_batches(dl, n_cl) if n_cl else contextlib.nullcontext() # (before session 38)
import types
for spec in args[2:]:
    name,_,n = spec.partition(':') # TASK:N, a task whose maker takes `n` made at that size (`collab:200000`: a validation set of 40,000 ratings)
    w = _warm_learner(ZOO[name](**({'n': int(n)} if n else {}))); d = w.dls.valid.new(shuffle=False, drop_last=False)
    fi = w.fast_inference
    def setting(on):
        if what=='loop': fi.lean_loop = on
        elif what=='detach': fc._plain_detach = plain_detach if on else (lambda b, cpu: None)
        elif what=='order': fc._in_order = in_order if on else (lambda dl: False)
        elif what=='attrs':
            for m in (fc, fpp, fim): m.loaders_of = loaders_of if on else old_loaders_of
            finf.lean_iter = lean_iter if on else old_lean_iter
        elif what=='sliced': finf.sliced_batches = sliced_batches if on else no_slices
        elif what=='tabchunk': fpp._lean_tab_batches = chunked_tab_batches if on else lean_tab_batches # (looked up when a loop makes its loader lean)
        elif what=='cpuflags': fprec.cpu_has_bf16 = cpu_has_bf16 if on else read_cpu_has_bf16
        elif what=='calls':
            fpp._pipelines = pipelines_now if on else old_pipelines
            w.train_eval.before_fit = types.MethodType(train_start_now if on else old_train_start, w.train_eval)
            finf.lean_iter = lean_iter if on else lean_iter_s36
        elif what=='ragged': fpp._ragged = ragged if on else (lambda dl: None)
        elif what=='range': finf.lean_iter = lean_iter if on else lean_iter_s37
        elif what=='slices': finf.sliced_batches = sliced_batches if on else cl_slices_only
        elif what=='pass': # (before session 39: the loop asked for both at each batch)
            finf.model_batch_device = model_batch_device if on else (lambda m: m)
            finf.batch_on = batch_on if on else fc.on_model_device
            finf.pass_detach = pass_detach if on else (lambda learn: learn.to_detach)
        elif what=='null': pass
        elif what=='types':
            fpp._Stack.batch,fpp._ItemCache.fresh = (stack_batch,fresh) if on else (old_stack_batch,old_fresh)
            fc.on_model_device = on_model_device if on else old_on_model_device
            finf.batch_on = batch_on if on else old_batch_on
        else: fc._FAST_LOOPS.clear(); fc._FAST_LOOPS.update(fast_loops if on else {})
    item = _first_item(w)
    f = {'preds': lambda: w.get_preds(dl=d), 'input': lambda: w.get_preds(dl=d, with_input=True), 'predict': lambda: w.predict(item)}[call]
    def job(on):
        def g(r):
            setting(on)
            with no_bar(w):
                t0 = time.perf_counter()
                for _ in range(10): f()
                return 10/(time.perf_counter()-t0)
        return g
    res = interleave({'with': job(True), 'without': job(False)}, rounds=rounds, show=False)
    setting(True)
    with no_bar(w): f()
    print(f"{spec}: {call} with the {what} shortcut vs without {tuple(round(x,3) for x in ratio_interval(res['with'], res['without']))} (loop: {fi.last_loop})", flush=True)
