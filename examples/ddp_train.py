"""Data-parallel training with fastai and fastperf: one process per GPU (NCCL), or per group of CPU cores (gloo).

Launch it like any DDP script; every process runs this whole file:

    torchrun --nproc_per_node 2 examples/ddp_train.py                      # 2 GPUs, or 2 CPU processes without GPUs
    accelerate launch --multi_gpu --num_processes 2 examples/ddp_train.py  # the same through accelerate's launcher
    python examples/ddp_train.py                                           # one process, no DDP: the same script

(On a machine without GPUs, `accelerate launch --multi_gpu` still starts the processes with torchrun's launcher, and
`learn.ddp_ctx()` uses gloo; `accelerate launch --cpu` runs one process unless accelerate is configured for MPI.)

What happens:
- `learn.ddp_ctx()` (fastai's `distrib_ctx` with fastperf's `DDPTrainer`, which works on CPU processes too) wraps the
  model in `DistributedDataParallel` and gives each process its share of every epoch (`--bs` is the batch size per
  process).
- fastperf's callbacks run in every process: `CastToTensor` and `ChannelsLast` per rank (ChannelsLast converts the model
  before DDP wraps it), `CudnnBenchmark` per process, `AutoMixedPrecision` per rank, `Compile` in place (see
  nbs/13_distributed.ipynb for where it sits relative to the DDP wrapper).
- `ThroughputTimer` times each rank's steps by phase and gathers every rank's numbers at the end of each epoch (one
  all_gather): the `samples/s` column of the training table is the global one, the sum over ranks.
- Only rank 0 prints and writes the report (`--report`: every rank calls `timer.save`, which writes on rank 0 only, with
  the verdict from all ranks and the global samples/s); the ranks wait for each other only where numbers are gathered.
"""
import argparse, json
import torch
from fastai.vision.all import Learner, accuracy, set_seed, rank_distrib, num_distrib
from fastperf.distributed import all_ranks, is_rank0, params_digest, distributed_report # and `Learner.ddp_ctx`
from fastperf.core import model_device
from fastperf.measure.data import synthetic_dls, digits_dls, small_cnn
from fastperf.cast import CastToTensor
from fastperf.channelslast import ChannelsLast
from fastperf.timer import ThroughputTimer

def get_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', choices=['synthetic','digits'], default='synthetic', help='synthetic images, or scikit-learn digits (offline)')
    p.add_argument('--n-train', type=int, default=1024, help='training images of the synthetic data')
    p.add_argument('--size', type=int, default=32, help='image size')
    p.add_argument('--bs', type=int, default=32, help='batch size per process')
    p.add_argument('--epochs', type=int, default=2)
    p.add_argument('--lr', type=float, default=1e-2)
    p.add_argument('--warmup', type=int, default=2, help='first steps of the fit that ThroughputTimer counts as warm-up')
    p.add_argument('--no-channels-last', action='store_true', help='leave the model in NCHW')
    p.add_argument('--cudnn-benchmark', action='store_true', help='CudnnBenchmark (per process; CUDA)')
    p.add_argument('--amp', action='store_true', help="bf16 mixed precision (fastperf's AutoMixedPrecision)")
    p.add_argument('--compile', action='store_true', help="torch.compile the model (fastperf's Compile)")
    p.add_argument('--report', default=None, help='write the report to REPORT.csv and REPORT.json (rank 0 only)')
    p.add_argument('--seed', type=int, default=0)
    return p.parse_args(argv)

def get_cbs(args):
    cbs = [CastToTensor()]
    if not args.no_channels_last: cbs.append(ChannelsLast())
    if args.cudnn_benchmark:
        from fastperf.cudnn import CudnnBenchmark
        cbs.append(CudnnBenchmark())
    if args.amp:
        from fastperf.precision import AutoMixedPrecision
        cbs.append(AutoMixedPrecision(precision='bf16'))
    if args.compile:
        from fastperf.compiler import Compile
        cbs.append(Compile())
    return cbs + [ThroughputTimer(warmup=args.warmup)]

def main(argv=None):
    args = get_args(argv)
    set_seed(args.seed) # the same initial weights everywhere (DDP also broadcasts rank 0's when it wraps the model)
    if args.data=='digits': dls = digits_dls(size=args.size, bs=args.bs)
    else: dls = synthetic_dls(n_train=args.n_train, n_valid=max(args.bs, args.n_train//8), size=args.size, bs=args.bs)
    learn = Learner(dls, small_cnn(dls.c), metrics=accuracy, cbs=get_cbs(args))
    with learn.ddp_ctx(): # DDP under torchrun / accelerate launch; nothing in a plain `python` run
        learn.fit_one_cycle(args.epochs, args.lr)
    timer = learn.throughput_timer
    # Gathering is a collective: every rank calls these two; only rank 0 prints and writes
    rep = distributed_report(timer) # global samples/s, per-rank phase times, verdict from all ranks
    col = learn.recorder.metric_names.index('samples/s')-1 # the table's column (values leave out 'epoch')
    ranks = all_ranks(dict(rank=rank_distrib(), train_iter=learn.train_iter, params=params_digest(learn.model),
                           samples=timer.samples, samples_per_sec=timer.samples_per_sec,
                           # this rank's own samples/s in the last epoch (as it sent it to the others), None in one process
                           last_epoch_samples_per_sec=None if timer.rank_stats is None else timer.rank_stats.loc[rank_distrib(), 'epoch_samples_per_sec'],
                           table_samples_per_sec=[v[col] for v in learn.recorder.values]))
    if is_rank0():
        print(f"\n{max(num_distrib(),1)} process(es), {model_device(learn.model)}; global {rep['global_samples_per_sec']:,.0f} samples/s")
        print(rep['ranks'].round(2).to_string())
        print(rep['verdict'])
        print('RANKS ' + json.dumps(ranks))
        print('REPORT ' + json.dumps(dict(global_samples_per_sec=rep['global_samples_per_sec'], verdict=rep['verdict'])))
    if args.report:
        paths = timer.save(args.report) # every rank calls it; only rank 0 writes
        if paths: print(f'report: {paths[0]} {paths[1]} (rank {rank_distrib()})')
    if torch.distributed.is_initialized(): torch.distributed.destroy_process_group()

if __name__=='__main__': main()
