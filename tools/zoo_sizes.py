"""No harm beyond the zoo's sizes (session 41): `to_fastperf()` against fastai's defaults and the plain loop in training (`zoo_train`,
interleaved rounds) on the zoo's tasks made at other batch and image sizes: the smallest batches, where fastai's per-batch Python is
most of a step, and larger ones, where the model's work is. The one call's rules were measured at the zoo's sizes; this checks them at others.
Usage: python tools/zoo_sizes.py [ROUNDS]   (default 5; nothing else running; about 3 minutes on a 2-core CPU)"""
import sys, time, warnings; warnings.filterwarnings('ignore')
from fastperf.measure.zoo import ZOO, zoo_train

CONFIGS = [('digits_cnn', dict(bs=8)), ('digits_cnn', dict(size=64, bs=256)), ('resnet18', dict(size=32, bs=8)), ('resnet18', dict(size=128, bs=16)),
           ('tabular', dict(bs=32)), ('tabular', dict(bs=2048)), ('collab', dict(bs=32)), ('collab', dict(bs=4096)), ('collab', dict(n=200000, bs=4096)),
           ('vit', dict(bs=8)), ('multilabel', dict(bs=8)), ('text', dict(bs=8))]

if __name__=='__main__':
    rounds = int(sys.argv[1]) if len(sys.argv)>1 else 5
    for name,kw in CONFIGS:
        t0 = time.time()
        task = ZOO[name](**kw)
        d = zoo_train(task, rounds=rounds).set_index('loop')
        f = d.loc['to_fastperf()']
        print(f"{name} {kw}: {len(task.make().dls.train)} batches an epoch; to_fastperf() vs fastai's defaults {f.vs_fastai:.2f} [{f.vs_fastai_lo:.2f}-{f.vs_fastai_hi:.2f}], "
              f"vs the plain loop {f.vs_plain:.2f} [{f.vs_plain_lo:.2f}-{f.vs_plain_hi:.2f}] ({time.time()-t0:.0f} s)", flush=True)
