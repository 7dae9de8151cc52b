#!/bin/sh
# Makes the logs in this folder: EPO and linear scalarization continued
# for 128 steps from the same linear warm-up (192 steps, weights w, 1 − w),
# as one model of `paretonav bench multimnist --budget medium --layout sener`
# (w = 0.5 and 0.3; LeNet2 initialised with seed 1). Run from this folder with
# PARETONAV naming the binary (it also writes the models and the data,
# about 45 MB, beside the logs); then
#   /usr/bin/python3 ../../epo_steps.py epo_0.5.jsonl linear_0.5.jsonl epo_0.3.jsonl linear_0.3.jsonl
set -e
P=${PARETONAV:-paretonav}
$P models lenet2 --seed 1 --out lenet2.onnx
$P data multimnist --layout sener --limit 8192 --seed 0 --out train.npz
$P data multimnist --layout sener --split test --limit 2048 --seed 0 --out test.npz
T="--task left:nll:logp_left:left --task right:nll:logp_right:right --criterion left+right --batch 256"
for w in 0.5 0.3; do
  r=$(python3 -c "print(round(1-$w,2))")
  $P tune lenet2.onnx --data train.npz $T --method linear --weights $w,$r --steps 192 --seed 1 --out warm_$w.onnx
  $P tune warm_$w.onnx --data train.npz --val test.npz --val-every 16 $T --method epo --preference $w,$r --steps 128 --seed 2 --out epo_$w.onnx --log epo_$w.jsonl
  $P tune warm_$w.onnx --data train.npz --val test.npz --val-every 16 $T --method linear --weights $w,$r --steps 128 --seed 2 --out linear_$w.onnx --log linear_$w.jsonl
done
