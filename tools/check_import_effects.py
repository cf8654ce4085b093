"""Check that importing fastperf changes nothing in fastai, fastcore or torch.

    python tools/check_import_effects.py                  # import fastperf.all and every fastperf module
    python tools/check_import_effects.py --with-distributed  # the same with fastai.distributed loaded first
    python tools/check_import_effects.py --import mymod   # also import `mymod` after fastperf (tests plant a patch this way)

It takes, in a fresh process, the `id()` of every attribute (public and private) of fastai's `Learner`, `DataLoader`,
`DataLoaders`, `TfmdDL`, `Callback` (and `DistributedTrainer`, `DistributedDL` with --with-distributed), of every
callable in `fastai.data.load`, `fastai.torch_core` (and `fastai.distributed`), fastai's `defaults.callbacks`, torch's
backend flags and grad mode, and the number of atexit hooks; imports fastperf; and takes them again. Attributes fastperf
*adds* (`@patch`, fastai's idiom) are listed but allowed; one replaced or removed, or a setting that moved, is an error:
it prints each and exits 1. """
import argparse, atexit, importlib, pkgutil, sys, warnings

def _backend_flags():
    import torch
    b = torch.backends
    return dict(cudnn_benchmark=b.cudnn.benchmark, cudnn_deterministic=b.cudnn.deterministic, cudnn_enabled=b.cudnn.enabled,
                cudnn_allow_tf32=b.cudnn.allow_tf32, matmul_allow_tf32=b.cuda.matmul.allow_tf32,
                matmul_precision=torch.get_float32_matmul_precision(), grad_enabled=torch.is_grad_enabled(),
                inference_mode=torch.is_inference_mode_enabled(), deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
                num_threads=torch.get_num_threads(), default_dtype=str(torch.get_default_dtype()))

def snapshot(distributed:bool)->dict:
    "id() of every watched attribute, the watched settings, and the atexit hook count"
    import fastai.learner, fastai.data.load, fastai.data.core, fastai.torch_core, fastai.callback.core
    import fastai.callback.channelslast # fastperf's `ChannelsLast` and `AutoMixedPrecision` extend fastai's: their modules (and fastai's progress bar,
                                        # which they load, as every `fastai.*.all` does) are fastai's own imports, not fastperf's doing
    import torch._dynamo # torch's own import registers atexit hooks: not fastperf's doing
    from fastcore.basics import defaults
    classes = [fastai.learner.Learner, fastai.data.load.DataLoader, fastai.data.core.DataLoaders, fastai.data.core.TfmdDL, fastai.callback.core.Callback]
    modules = [fastai.data.load, fastai.torch_core]
    if distributed:
        import fastai.distributed
        classes += [fastai.distributed.DistributedTrainer, fastai.distributed.DistributedDL]
        modules.append(fastai.distributed)
    s = {f'{c.__module__}.{c.__qualname__}.{k}': id(v) for c in classes for k,v in vars(c).items() if k!='__doc__'}
    s.update({f'{m.__name__}.{k}': id(v) for m in modules for k,v in vars(m).items() if callable(v)})
    s['defaults.callbacks'] = repr(list(defaults.callbacks))
    s.update({f'torch.{k}': v for k,v in _backend_flags().items()})
    s['atexit hooks'] = atexit._ncallbacks()
    return s

def fastperf_modules()->list:
    import fastperf
    return ['fastperf.all'] + [m.name for m in pkgutil.walk_packages(fastperf.__path__, 'fastperf.') if not m.name.rsplit('.', 1)[-1].startswith('_')]

def main(argv=None)->int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--with-distributed', action='store_true', help="load fastai.distributed (and so fastai's progress module) first")
    p.add_argument('--import', dest='extra', nargs='*', default=[], help="modules to import after fastperf")
    a = p.parse_args(argv)
    warnings.simplefilter('ignore')
    before = snapshot(a.with_distributed)
    mods = fastperf_modules()
    for m in mods + a.extra: importlib.import_module(m)
    after = snapshot(a.with_distributed)
    changed = sorted(k for k in before if k in after and before[k]!=after[k])
    removed = sorted(k for k in before if k not in after)
    added = sorted(k for k in after if k not in before)
    print(f"imported {len(mods)} fastperf modules{' and ' + ', '.join(a.extra) if a.extra else ''}; "
          f"watched {len(before)} attributes and settings; {len(added)} added (allowed)")
    for k in changed: print(f"CHANGED {k}: {before[k]!r} -> {after[k]!r}" if not isinstance(before[k], int) or k.startswith('torch.') or k=='atexit hooks' else f"REPLACED {k}")
    for k in removed: print(f"REMOVED {k}")
    if changed or removed: print(f"{len(changed)+len(removed)} change(s) to fastai, fastcore or torch on import"); return 1
    print("nothing replaced, removed or changed")
    return 0

if __name__=='__main__': sys.exit(main())
