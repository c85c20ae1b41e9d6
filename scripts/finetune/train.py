#!/usr/bin/env python3
"""Fine-tunes a sentence-transformers model on mined (question, code) pairs (see mine.py).

Usage: scripts/finetune/train.py PAIRS.jsonl BASE_MODEL_DIR OUT_DIR [--epochs 1] [--lr 2e-5]
                                 [--batch 64] [--max-pairs N] [--threads 2] [--group]

One pair per distinct question (case-insensitive), shuffled; in-batch negatives
(MultipleNegativesRankingLoss: every other answer in the batch is a wrong one), texts cut at 128
word pieces, 10% warm-up. Writes OUT_DIR as sentence-transformers saves it (model.safetensors,
config.json, ...); scripts/finetune/run.sh then copies the base folder's tokenizer and pooling files
over it and exports the ONNX files. Needs torch and sentence-transformers (run.sh makes a venv).
"""
import argparse
import json
import random
import time

import torch
from sentence_transformers import InputExample, SentenceTransformer, losses
from torch.utils.data import DataLoader

ap = argparse.ArgumentParser()
ap.add_argument('pairs')
ap.add_argument('base')
ap.add_argument('out')
ap.add_argument('--epochs', type=int, default=1)
ap.add_argument('--lr', type=float, default=2e-5)
ap.add_argument('--batch', type=int, default=64)
ap.add_argument('--max-pairs', type=int, default=0, help='at most this many pairs (0: all)')
ap.add_argument('--threads', type=int, default=2)
ap.add_argument('--group', action='store_true',
                help='fill each batch from one package (its first path segment), so the in-batch\n'
                'negatives are neighbouring definitions, not code of other projects')
a = ap.parse_args()

torch.set_num_threads(a.threads)
random.seed(7)
torch.manual_seed(7)
seen, data = set(), []
with open(a.pairs) as f:
    for line in f:
        d = json.loads(line)
        k = d['query'].lower()
        if k not in seen:
            seen.add(k)
            data.append(d)
random.shuffle(data)
if a.max_pairs:
    data = data[:a.max_pairs]
if len(data) < a.batch:
    raise SystemExit(f'train.py: {len(data)} pairs, fewer than one batch of {a.batch}')
print(f'{len(data)} pairs, {len(data) // a.batch} steps an epoch', flush=True)
model = SentenceTransformer(a.base, device='cpu')
model.max_seq_length = 128
examples = [InputExample(texts=[d['query'], d['doc']]) for d in data]
if a.group:
    by_pkg = {}
    for d, e in zip(data, examples):
        by_pkg.setdefault(d['doc'].split('/', 1)[0], []).append(e)
    batches, rest = [], []
    for group in by_pkg.values():
        n = len(group) // a.batch * a.batch
        batches += [group[i:i + a.batch] for i in range(0, n, a.batch)]
        rest += group[n:]
    batches += [rest[i:i + a.batch] for i in range(0, len(rest) // a.batch * a.batch, a.batch)]
    random.shuffle(batches)
    examples = [e for b in batches for e in b]
    # model.fit() keeps the examples' order in its dataset but samples batches at random; these
    # batches are the dataset's consecutive runs instead.
    from sentence_transformers.trainer import SentenceTransformerTrainer

    class Consecutive(torch.utils.data.Sampler):
        def __init__(self, n):
            self.n, self.batch_size, self.drop_last = n, a.batch, True

        def __iter__(self):
            return iter([list(range(i, i + a.batch)) for i in range(0, self.n // a.batch * a.batch, a.batch)])

        def __len__(self):
            return self.n // a.batch

    SentenceTransformerTrainer.get_batch_sampler = lambda self, dataset, *args, **kw: Consecutive(len(dataset))
loader = DataLoader(examples, shuffle=not a.group, batch_size=a.batch, drop_last=True)
loss = losses.MultipleNegativesRankingLoss(model)
t = time.time()
model.fit(train_objectives=[(loader, loss)], epochs=a.epochs,
          warmup_steps=int(0.1 * len(loader) * a.epochs), optimizer_params={'lr': a.lr},
          show_progress_bar=True, use_amp=False)
print(f'trained in {time.time() - t:.0f} s', flush=True)
model.save(a.out)
