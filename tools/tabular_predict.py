"""A tabular row through `learn.predict` and through `learn.predictor()` (which makes the model's input with `TabRows`, without a
`TabularPandas`), and the plain forward, on the zoo's tabular Learner (fastai's defaults, and as after training with fastperf), with an
unprocessed row of the zoo's table, as a user passes one: `predict_latency`'s medians of 60 interleaved calls (session 40).
Usage: python tools/tabular_predict.py   (nothing else running)"""
import warnings; warnings.filterwarnings('ignore')
import numpy as np, pandas as pd
from fastperf.all import *
from fastperf.measure.zoo import ZOO, _warm_learner, _first_item
from fastperf.measure.inference import predict_latency
from fastperf.inference import TabRows
n, seed = 20000, 0 # the zoo's tabular table, as `tabular_task` makes it
r = np.random.default_rng(seed)
df = pd.DataFrame({f'c{i}': r.normal(size=n) for i in range(8)})
for i in range(4): df[f'k{i}'] = r.integers(0, 10+5*i, n).astype(str)
df['y'] = ((df.c0+0.5*df.c1+(df.k0=='3'))>0).astype(int)
for name,make in (('fastai defaults', lambda: ZOO['tabular']().make()), ('after training with fastperf (_warm_learner)', lambda: _warm_learner(ZOO['tabular']()))):
    w = make()
    row = df.iloc[int(n*0.8)] # the first validation row, unprocessed, as a user passes one
    assert TabRows(w.dls.train_ds)(row) is not None
    print(name); print(predict_latency(w, row, n=60).round(3).to_string())
