"""The worker rule (`rules.worker_rule`: 0 DataLoader workers on a CPU of at most 4 cores) on a task it was not measured on (session 39):
an image folder of real JPEG photos (`photo_folder`: 512 training and 128 validation crops of 500x375 of the photographs scikit-learn
and matplotlib ship), fastai's `ImageDataLoaders.from_folder` with a random crop per item (`RandomResizedCrop(SIZE, min_scale=0.35)`,
so the training items are decoded and cropped anew every epoch) and `Normalize`, batch 64, and a cheap model (`small_cnn`, or resnet18),
where the decoding is most of the work. Four Learners, one epoch each (training and validation) per round, interleaved:
  fastai defaults           fastai's own worker count (`defaults.cpus`: 2 on a 2-core machine)
  fastai, 0 workers         the zoo's baseline ("fastai defaults" there are built with `num_workers=0`)
  to_fastperf()             the rule (0 workers here), with the rest of the one call
  to_fastperf(workers=2)    the one call with fastai's worker count
Usage: python tools/workers_check.py [SIZE (64)] [small|resnet18] [ROUNDS (5)]   (nothing else running: the workers are processes)"""
import sys, time, statistics, tempfile, warnings; warnings.filterwarnings('ignore')
from pathlib import Path
from fastai.vision.all import *
from fastperf.all import *
from fastperf.core import no_bar
from fastperf.measure.data import photo_folder, small_cnn
from fastperf.measure.clock import interleave, ratio_interval

size,arch,rounds = (int(sys.argv[1]) if len(sys.argv)>1 else 64),(sys.argv[2] if len(sys.argv)>2 else 'small'),(int(sys.argv[3]) if len(sys.argv)>3 else 5)
path = photo_folder(Path(tempfile.mkdtemp())/'photos', n_train=512, n_valid=128)

def make():
    set_seed(0)
    dls = ImageDataLoaders.from_folder(path, valid='valid', item_tfms=RandomResizedCrop(size, min_scale=0.35), batch_tfms=Normalize.from_stats(*imagenet_stats), bs=64)
    return Learner(dls, small_cnn(dls.c) if arch=='small' else resnet18(num_classes=dls.c), metrics=accuracy)

learners = {'fastai defaults': make(), 'fastai, 0 workers': make(), 'to_fastperf()': make().to_fastperf(verbose=False),
            'to_fastperf(workers=2)': make().to_fastperf(workers=2, verbose=False)}
for dl in learners['fastai, 0 workers'].dls.loaders: dl.fake_l.num_workers = 0
n = len(learners['fastai defaults'].dls.train_ds)+len(learners['fastai defaults'].dls.valid_ds)
def job(l):
    def f(r):
        with no_bar(l), l.no_logging():
            t0 = time.perf_counter(); l.fit(1, 1e-3); return n/(time.perf_counter()-t0)
    return f
for l in learners.values(): job(l)(0) # (an epoch each first: the workers' start, the item cache's first fill)
res = interleave({k:job(l) for k,l in learners.items()}, rounds=rounds)
print(f"{arch} at {size}px, {rounds} interleaved rounds of one epoch each ({n} images: training and validation); workers per loader:")
for k,l in learners.items():
    r = ratio_interval(res[k], res['fastai defaults'])
    print(f"  {k:24s} {[dl.fake_l.num_workers for dl in l.dls.loaders]}  {statistics.median(res[k]):8.1f} images/s  {r[0]:.3f}x [{r[1]:.3f}-{r[2]:.3f}] fastai's defaults")
