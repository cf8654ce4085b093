"""The inference page's numbers: `inference_parity` (resnet18, 64px, batch 64, 1,024 in-memory uint8 images from `synth_images`, 9 rounds) and `predict_latency`
with and without `to_fast_inference`. Run: python tools/inference_numbers.py"""
import warnings; warnings.simplefilter('ignore')
import pandas as pd
from fastai.vision.all import *
from fastperf.all import *
import fastperf.inference # Learner.to_fast_inference
from fastperf.measure.data import synth_images, fastai_dls
from fastperf.measure.inference import inference_parity, predict_latency
from torchvision.models import resnet18
set_seed(0)
learn = Learner(fastai_dls(*synth_images(64+1024, 64), 64, n_valid=1024, device=default_device(), num_workers=0), resnet18(num_classes=10), loss_func=CrossEntropyLossFlat())
with pd.option_context('display.width', 200, 'display.max_columns', 20):
    print(inference_parity(learn, rounds=9))
    learn.to_fast_inference(verbose=False)
    print(predict_latency(learn, 5, n=30))
    learn.undo_fast_inference(verbose=False)
    print(predict_latency(learn, 5, n=30))
