"""Everyday fastai workflows with every fastperf callback, alone and all together, as a user runs them: each configuration
is one fresh Python process (tests/workflow_script.py) that imports only fastai and the installed fastperf, trains on a folder
of real PNG/JPEG files written here (3 colour classes, 32 px: learnable, so accuracy means something), and calls lr_find,
fine_tune, fit_one_cycle, several fits, validate, get_preds (with_loss, with_decoded, test_dl), predict, tta,
ClassificationInterpretation, show_results, save/load, a checkpoint with its optimizer state loaded across fastperf's and fastai's
optimizers both ways (to_fastperf), export/load_learner + predict, GradientAccumulation, SaveModelCallback,
EarlyStoppingCallback, MixUp, callbacks passed to fit(cbs=...), and fastai's to_bf16()/to_fp16() next to fastperf's callbacks.
The script asserts what the user sees and that global state (cudnn flags, matmul precision, autocast, grad mode, fastai's
to_device, hooks, the model's memory format where restore is asked) is as it was; the tests here compare accuracy with plain
fastai. A tabular Learner on a small frame gets every callback and to_fastperf() too, and segmentation, multi-label, keypoint and
text Learners get to_fastperf() and to_fast_inference(); a language model and a collaborative filtering model get to_fastperf(),
against fastai's defaults. Two processes run side by side."""
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import numpy as np, pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent
SCRIPT = ROOT/'workflow_script.py'
CONFIGS = ['plain', 'all', 'to_fastperf', 'cast', 'channelslast', 'cudnn', 'amp', 'timer', 'syncdebug', 'profiler', 'compile', 'nosync', 'tabular', 'tasks', 'lm_collab']
# FASTPERF_WORKFLOWS=plain,tasks runs only those sessions (tools/gpu_check.sh's CPU mode); the tests of the others skip
# callbacks that stand aside where there is no CUDA device (they say so once): alone, their sessions would be `plain`'s again;
# on a CPU the `all` and `tabular` sessions carry them, on a GPU (tools/gpu_check.sh) each runs alone too
CUDA_ONLY = {'cudnn': 'CudnnBenchmark', 'syncdebug': 'SyncDebug', 'nosync': 'NoSyncLoss'}
# on a CPU each of these callbacks is tested in the `all` session (every entry point, with the others) and alone in its notebook;
# a session of its own runs on a GPU, where they meet CUDA's code paths
IN_ALL = {'cast': 'CastToTensor', 'channelslast': 'ChannelsLast', 'amp': 'AutoMixedPrecision', 'timer': 'ThroughputTimer', 'profiler': 'Profiler'}
import torch
RUN = [c for c in CONFIGS if c in os.environ['FASTPERF_WORKFLOWS'].split(',')] if os.environ.get('FASTPERF_WORKFLOWS') else [
       c for c in CONFIGS if torch.cuda.is_available() or (c not in CUDA_ONLY and c not in IN_ALL)]
XFAIL = {} # config -> reason, for bugs in modules this suite's authors do not own (none open now)

def write_images(root, n_train=30, n_valid=10, size=32, seed=0):
    "3 colour classes of noisy images with a random distractor patch, half PNG and half JPEG"
    rng = np.random.default_rng(seed)
    cols = dict(red=(200,40,40), green=(40,180,40), blue=(40,40,200))
    for split,n in (('train',n_train), ('valid',n_valid)):
        for c,rgb in cols.items():
            d = Path(root)/split/c; d.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                a = rng.integers(0, 60, (size,size,3)) + np.array(rgb)*rng.uniform(0.7, 1.0)
                y0,x0 = rng.integers(0, size//2, 2); a[y0:y0+size//4, x0:x0+size//4] = rng.integers(0, 255, 3)
                img = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
                img.save(d/f'{i}.png') if i%2 else img.save(d/f'{i}.jpg', quality=90)
    return Path(root)

def _run(cfg, data, work):
    work.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, str(SCRIPT), cfg, str(data), str(work)], capture_output=True, text=True, timeout=1800, cwd=work)
    lines = [l for l in p.stdout.splitlines() if l.startswith('RESULT ')]
    return dict(rc=p.returncode, res=json.loads(lines[-1][7:]) if lines else None,
                log=f"exit {p.returncode}\n--- stdout\n{p.stdout[-3000:]}\n--- stderr\n{p.stderr[-5000:]}")

@pytest.fixture(scope='module')
def sessions(tmp_path_factory):
    "Every configuration's session, two processes at a time (2-core machine; each process uses one torch thread; FASTPERF_WORKFLOW_PROCS=N for N)"
    base = tmp_path_factory.mktemp('workflows')
    data = write_images(base/'data')
    with ThreadPoolExecutor(int(os.environ.get('FASTPERF_WORKFLOW_PROCS', 2))) as ex:
        futs = {c:ex.submit(_run, c, data, base/c) for c in RUN}
        return {c:f.result() for c,f in futs.items()}

def _ok(sessions, cfg):
    if cfg in CUDA_ONLY and cfg not in sessions and not torch.cuda.is_available(): pytest.skip(f"{CUDA_ONLY[cfg]} stands aside without CUDA (the `all` session has it here)")
    if cfg in IN_ALL and cfg not in sessions and not torch.cuda.is_available(): pytest.skip(f"{IN_ALL[cfg]}: on a CPU in the `all` session (alone on a GPU)")
    if cfg not in sessions: pytest.skip(f"{cfg}: not in FASTPERF_WORKFLOWS")
    r = sessions[cfg]
    assert r['rc']==0 and r['res'] is not None, r['log']
    return r['res']

def test_images_are_real_files(tmp_path):
    "The data is what from_folder reads from disk: PNG and JPEG files in class folders"
    d = write_images(tmp_path/'d', n_train=2, n_valid=1)
    assert sorted({p.suffix for p in d.rglob('*.*')})==['.jpg', '.png']
    assert sorted(p.name for p in (d/'train').iterdir())==['blue', 'green', 'red']
    assert Image.open(next(d.rglob('*.jpg'))).size==(32, 32)

def test_plain_fastai_learns(sessions):
    "The baseline: plain fastai learns the task, so the other configurations' accuracy is a real comparison"
    res = _ok(sessions, 'plain')
    assert res['accuracy']>=0.9, res

@pytest.mark.parametrize('cfg', [c for c in CONFIGS if c not in ('plain', 'tasks', 'lm_collab')])
def test_workflow(sessions, cfg):
    "Every entry point works with this configuration, state is restored, and accuracy is plain fastai's within noise"
    if cfg in XFAIL: pytest.xfail(XFAIL[cfg])
    res = _ok(sessions, cfg)
    n_eps = 7 if cfg=='tabular' else 10 if cfg=='compile' else 22
    assert len(res['entry_points'])==n_eps, res['entry_points']
    # accuracy: 30 validation images (100 rows for tabular): within 0.15 (about 4 images) of plain fastai's
    base = res['accuracy_plain'] if 'accuracy_plain' in res else _ok(sessions, 'plain')['accuracy']
    assert base>=0.8 and res['accuracy']>=base-0.15, (res['accuracy'], base)
    if cfg in ('timer', 'all'):
        assert res['timer']['samples_per_sec']>0 and res['timer']['verdict'], res['timer']
    if cfg in ('profiler', 'all'): assert res['profiled'], res
    if cfg in ('amp', 'all'): # AutoMixedPrecision('bf16') on this CPU: a warning where bf16 is emulated, none where the CPU has it
        from fastperf.rules import cpu_has_bf16
        assert any('bf16 autocast is emulated' in w for w in res['warnings'])!=cpu_has_bf16(), res['warnings']
        import torch
        if not torch.cuda.is_available(): assert res['arch']==('resnet18' if cpu_has_bf16() else 'tiny'), res['arch'] # where bf16 is emulated, the tiny model (resnet18 took minutes there)
    print(cfg, {k:res[k] for k in res if k not in ('entry_points',)})
    if 'fit_cbs_learner_cbs' in res: # callbacks given to fit(cbs=...) leave the Learner's own callbacks as they were
        before,after = res['fit_cbs_learner_cbs']
        assert before==after, res['fit_cbs_learner_cbs']
    if cfg=='to_fastperf': # save(with_opt=True) from fastperf's optimizer, load into fastai's Adam, save, load into fastperf's: same averages
        assert res['checkpoint_opts']==['TorchOptimizer', 'Optimizer', 'TorchOptimizer'], res.get('checkpoint_opts')

def test_tasks(sessions):
    "Segmentation, multi-label, keypoints and text with to_fastperf(): every entry point, exports, and to_fast_inference's predictions next to fastai's"
    res = _ok(sessions, 'tasks')
    assert len(res['entry_points'])==36, res['entry_points']
    types = {t:r['pred_types'][0] for t,r in res['tasks'].items()}
    assert types==dict(segmentation='TensorMask', multilabel='MultiCategory', keypoints='TensorPoint', text='Category'), types
    print(res['tasks'])

def test_lm_collab(sessions):
    "A language model and a collaborative filtering model with to_fastperf(): the losses, predictions and generated text of fastai's defaults from the same seed (the script compares them)"
    res = _ok(sessions, 'lm_collab')
    assert len(res['entry_points'])==11, res['entry_points']
    assert res['lm']['text'].startswith('w1 w2') and len(res['lm']['text'].split())==7, res['lm']['text']
    assert len(res['collab']['test'])==5, res['collab']

@pytest.mark.parametrize('cfg', ['cast', 'all'])
def test_fit_cbs_cast_keeps_learner_callbacks(sessions, cfg):
    "fastperf's CastToTensor given to fit(cbs=...) replaces fastai's for that fit only: fastai's is back after it"
    before,after = _ok(sessions, cfg)['fit_cbs_learner_cbs']
    assert before==after, (before, after)
