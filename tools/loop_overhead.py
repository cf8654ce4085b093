"""fastai's per-batch overhead over a plain PyTorch loop, with and without lean pipelines, and with fastai's own callback dispatch and
`to_detach` instead of fastperf's, and `get_preds` on an unlabeled `test_dl` of the same items: a one-layer model (almost all of its time is overhead), resnet18's parity data (64px uint8 images
through a DataBlock, batch 32), interleaved rounds. Run: python tools/loop_overhead.py"""
import time, torch, statistics, warnings
warnings.simplefilter('ignore')
from fastai.vision.all import *
from fastperf.all import *
from fastperf.measure.parity import *
from fastperf.measure.data import synth_images, fastai_dls
from fastperf.measure.reference import PlainLoop, tensor_batches
import fastperf.recommend, fastperf.inference # Learner.to_fastperf, Learner.to_fast_inference
from fastperf.core import no_bar
from fastperf.measure.clock import measure_fit, rotated
bs=32; nb=32
x,y = synth_images(bs+nb*bs, 64)
class Tiny(nn.Module):
    def __init__(self): super().__init__(); self.c=nn.Conv2d(3,10,1)
    def forward(self, x): return self.c(x).mean((2,3))
L = {}
for lean in (False, True):
    torch.manual_seed(0)
    L[f'fit, to_fastperf(lean={lean})'] = Learner(fastai_dls(x, y, bs, n_valid=bs), Tiny(), loss_func=CrossEntropyLossFlat()).to_fastperf(verbose=False, lean=lean)
    vd = fastai_dls(x, y, bs, n_valid=nb*bs, shuffle=False)
    L[f'get_preds, to_fast_inference(lean={lean})'] = (Learner(vd, Tiny(), loss_func=CrossEntropyLossFlat()).to_fast_inference(verbose=False, lean=lean), vd.valid)
lu,dv = L['get_preds, to_fast_inference(lean=True)']
L['get_preds, to_fast_inference(lean=True), unlabeled'] = (lu, vd.test_dl(dv.items, bs=bs)) # the same items without their labels
feats = learner_features(L['fit, to_fastperf(lean=True)'])
P = PlainLoop(Tiny(), tensor_batches(x, y, bs), precision=feats['precision'], channels_last=feats['channels_last'])
lf = L['get_preds, to_fast_inference(lean=True)'][0]
PP = PlainLoop(Tiny(), tensor_batches(x[bs:], y[bs:], bs, shuffle=False), precision=lf._fast_inference['precision'], channels_last=lf._fast_inference['channels_last'], train=False, grad_mode='inference_mode')
from fastperf.core import set_fast_dispatch, LearnerMethod
for k in ('fit, to_fastperf(lean=True)', 'get_preds, to_fast_inference(lean=True)'): L[k.replace('=True)', '=True), fastai dispatch')] = L[k]
def run(k):
    "`_run(k)`; the 'fastai dispatch' rows with fastai's own `_call_one`/`to_detach` on that Learner (fastperf's stand-ins taken off for the call)"
    v = L.get(k); l = v[0] if isinstance(v, tuple) else v
    had = l is not None and isinstance(l.__dict__.get('_call_one'), LearnerMethod)
    if l is not None: set_fast_dispatch(l, 'fastai dispatch' not in k)
    try: return _run(k)
    finally:
        if l is not None: set_fast_dispatch(l, had)
def _run(k):
    v = L.get(k)
    if k=='plain fit': return 1000*bs/P.measure(steps=30, warmup=3)['samples_per_sec']
    if k=='plain eval': t=time.perf_counter(); PP.predict(nb, act=partial(torch.softmax, dim=-1)); return 1000*(time.perf_counter()-t)/nb
    if isinstance(v, tuple):
        l,dl = v
        with no_bar(l): t=time.perf_counter(); l.get_preds(dl=dl); return 1000*(time.perf_counter()-t)/nb
    with no_bar(v), v.no_logging(): return 1000*bs/measure_fit(v, steps=30, warmup=3)['samples_per_sec']
keys = list(L)+['plain fit','plain eval']
for k in keys: run(k)
res = {k:[] for k in keys}
for r in range(7):
    for k in rotated(keys, r): res[k].append(run(k))
for k in keys: print(f"{k:45s} {statistics.median(res[k]):6.2f} ms per batch of {bs}")
for kind,plain in (('fit, to_fastperf','plain fit'),('get_preds, to_fast_inference','plain eval')):
    for k in (f'{kind}(lean=False)', f'{kind}(lean=True)', f'{kind}(lean=True), fastai dispatch', f'{kind}(lean=True), unlabeled'):
        if k not in res: continue
        d = [a-b for a,b in zip(res[k], res[plain])]
        print(f"overhead over the plain loop, {k}: {statistics.median(d):.2f} ms per batch (per-round min {min(d):.2f}, max {max(d):.2f})")
