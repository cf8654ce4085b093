#!/usr/bin/env bash
# Session 27 GPU call: install wheels, nvJPEG micro, fastperf-images --decode-device cuda, cuda notebooks, zoo (resnet18, unet)
export PYTHONUNBUFFERED=1; T0=$SECONDS; END=${1:-570}; R=/tmp/r; mkdir -p $R
pack(){ tar czf $OUT/all.tgz -C $R . 2>/dev/null; echo "== packed at $((SECONDS-T0)) s"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
echo "== installed at $((SECONDS-T0)) s"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; python3 -c "import sys,torch,torchvision,fastai;print(sys.version.split()[0], torch.__version__, torchvision.__version__, fastai.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > $R/env.txt 2>&1; cat $R/env.txt
timeout 70 python3 .gpu/nvjpeg_micro.py > $R/nvjpeg_micro.txt 2>&1; cat $R/nvjpeg_micro.txt | tail -15; pack
timeout 210 python3 -c "import sys; from fastperf.measure.images import main; sys.exit(main())" --decode-device cuda --workers 0 8 --rounds 3 --no-disk --out $R/images > $R/images.log 2>&1; echo "images rc $?"; tail -30 $R/images.log; pack
B=$((END-(SECONDS-T0)-15)); echo "== gpu_check budget $B"
[ $B -gt 60 ] && OUT= timeout $((B+10)) tools/gpu_check.sh $R/gc --site /tmp/site --only notebooks zoo --budget $B --nb-limit 85 \
  --limit notebooks=$((B*6/10)) zoo=$((B*4/10-25)) --notebooks 10b_images.ipynb 11_recommend.ipynb 28_measure_inference.ipynb \
  --zoo-args '--rounds 3 --tasks resnet18 unet' > $R/gc.log 2>&1; tail -40 $R/gc/summary.md 2>/dev/null || tail -20 $R/gc.log
pack; ls -la $OUT
