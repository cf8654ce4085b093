"""A tabular row through `learn.predict` and through `learn.predictor()` (which makes the model's input with `TabRows`, without a
`TabularPandas`), and the plain forward, on the zoo's tabular Learner (fastai's defaults, and as after training with fastperf), with an
unprocessed row of the zoo's table, as a user passes one: `predict_latency`'s medians of 60 interleaved calls (session 40).
Usage: python tools/tabular_predict.py   (nothing else running)"""
import warnings; warnings.filterwarnings('ignore')
from fastperf.all import *
from fastperf.measure.zoo import ZOO, _warm_learner, zoo_item
from fastperf.measure.inference import predict_latency
from fastperf.inference import TabRows
task = ZOO['tabular']()
for name,make in (('fastai defaults', task.make), ('after training with fastperf (_warm_learner)', lambda: _warm_learner(task))):
    w = make()
    row = zoo_item(task, w) # the first validation row of the zoo's table, unprocessed, as a user passes one
    assert TabRows(w.dls.train_ds)(row) is not None
    print(name); print(predict_latency(w, row, n=60).round(3).to_string())
