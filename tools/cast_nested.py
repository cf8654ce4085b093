"""fastperf's `CastToTensor` against fastai's own on a batch that nests its images in a dict (`xb = ({'img': TensorImage},)`,
which fastai's cast, recursing into tuples only, leaves as a subclass): torchvision's resnet18 on the digits at 64px, batch 32, steady-state training samples/s
in interleaved rounds, with the ratio's 95% interval. Usage: python tools/cast_nested.py [--rounds 7]   (nothing else running)"""
import argparse, warnings; warnings.filterwarnings('ignore')
import torch, fastai.learner
from torch import nn
from fastai.vision.all import *
from fastperf.cast import CastToTensor
from fastperf.core import no_bar
from fastperf.measure.data import digits_dls, small_cnn
from fastperf.measure.clock import interleave, ratio_interval, measure_fit

class InDict(Callback):
    "The batch's images moved into a dict, as a multi-input pipeline hands them over"
    order = 5 # before either cast (9)
    def before_batch(self): self.learn.xb = ({'img': self.xb[0]},)

class DictModel(nn.Module):
    def __init__(self):
        from torchvision.models import resnet18
        super().__init__(); self.m = resnet18(num_classes=10)
    def forward(self, d): return self.m(d['img'])

def make(ours:bool):
    set_seed(0)
    learn = Learner(digits_dls(size=64, bs=32), DictModel(), loss_func=CrossEntropyLossFlat(), cbs=InDict())
    if ours:
        learn.remove_cbs([c for c in learn.cbs if type(c) is fastai.learner.CastToTensor]); learn.add_cb(CastToTensor())
    with no_bar(learn), learn.no_logging(): learn.fit(1)
    return learn

if __name__=='__main__':
    p = argparse.ArgumentParser(); p.add_argument('--rounds', type=int, default=7); a = p.parse_args()
    ls = {'fastperf CastToTensor': make(True), "fastai's CastToTensor": make(False)}
    def job(l):
        def f(r):
            with no_bar(l), l.no_logging(): return measure_fit(l, steps=20, warmup=2)['samples_per_sec']
        return f
    res = interleave({k: job(l) for k,l in ls.items()}, rounds=a.rounds)
    est,lo,hi = ratio_interval(res['fastperf CastToTensor'], res["fastai's CastToTensor"])
    print(f"{torch.__version__}: fastperf's against fastai's, nested batch, training: {est:.2f}x [{lo:.2f}-{hi:.2f}]",
          {k: round(sorted(v)[len(v)//2]) for k,v in res.items()})
