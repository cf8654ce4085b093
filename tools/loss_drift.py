"Why fastai's and the plain loop's losses part on a GPU: each loop's first losses under cuDNN's settings (TF32, deterministic, benchmark). Usage: python tools/loss_drift.py [cuda|cpu]"
import sys, torch, numpy as np, warnings, time
warnings.filterwarnings('ignore')
from fastperf.measure.parity import parity_config, parity_model, fastai_learner, _loss_run
from fastperf.measure import parity as P
from fastperf.measure.reference import PlainLoop, tensor_batches
D = sys.argv[1] if len(sys.argv)>1 else 'cuda'
c = parity_config(D, quick=D=='cpu', data='device'); dev = torch.device(D); n = 6 if D=='cuda' else 3
x,y = P.synth_images((c['warmup']+c['steps'])*c['bs'], c['size'], c['n_classes'], c['seed'], device=dev)
init = parity_model(c['arch'], c['n_classes'], c['seed'], c['size']).state_dict()
def model():
    m = parity_model(c['arch'], c['n_classes'], c['seed'], c['size']); m.load_state_dict(init); return m
dls = lambda: P.fastai_dls(torch.cat([x, x[:c['bs']]]), torch.cat([y, y[:c['bs']]]), c['bs'], c['data'], device=dev, num_workers=c['num_workers'], shuffle=False)
fa = lambda: _loss_run('fastai', lambda d: fastai_learner(d, model()), n, dls(), c['lr'])
pl = lambda: _loss_run('plain', lambda: PlainLoop(model(), tensor_batches(x, y, c['bs'], False, c['seed']), dev, lr=c['lr'], precision='fp32', channels_last=False, cudnn_benchmark=False), n, None, c['lr'])
B = torch.backends
def flags(det=False, tf32=True, bench=False): B.cudnn.deterministic, B.cudnn.allow_tf32, B.cudnn.benchmark = det, tf32, bench
def rel(a,b): return float(np.max(np.abs(np.array(a)-np.array(b)))/abs(b[0]))
for name,kw in [('default', {}), ('bench', dict(bench=True)), ('no_tf32', dict(tf32=False)), ('det', dict(det=True)), ('det_no_tf32', dict(det=True, tf32=False))]:
    t = time.time(); flags(**kw); p1 = pl(); f1 = fa(); p2 = pl()
    print(f"{name:12s} fastai-plain {rel(f1,p1):.2e} plain-plain {rel(p2,p1):.2e} step1 {abs(f1[1]-p1[1]):.2e}  ({time.time()-t:.0f}s)", flush=True)
flags(); p0 = pl(); flags(bench=True); pb = pl(); flags()
print(f"plain default vs plain bench: {rel(pb,p0):.2e}")
