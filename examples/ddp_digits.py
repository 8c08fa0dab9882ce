#!/usr/bin/env python3
"""Data-parallel training with DistributedDataParallel over mrc or gloo.

A small MLP learns scikit-learn's digits (8x8 images, 10 classes; shipped
with python3-sklearn, nothing is downloaded) on N processes of this host,
started by torch.multiprocessing.spawn and meeting through a FileStore in a
temporary directory. With the same seed both backends see the same batches
and the same initial weights, so their losses agree to float rounding (the
order in which each sums the gradients of more than two ranks).

    PYTHONPATH=build/python python3 examples/ddp_digits.py --backend mrc -n 2
    PYTHONPATH=build/python python3 examples/ddp_digits.py --backend gloo -n 4

Prints, from rank 0, one line per epoch: the mean training loss over every
rank's batches, and the median time of one training step (forward,
backward with DDP's gradient allreduce, optimizer step); then the accuracy
on the held-out images.
"""

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["mrc", "gloo"], default="mrc")
    p.add_argument("-n", "--nprocs", type=int, default=2,
                   help="processes (ranks) on this host (default 2)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--steps", type=int, default=0,
                   help="at most this many steps per epoch (0: all)")
    p.add_argument("--batch", type=int, default=32,
                   help="images per rank and step (default 32)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60,
                   help="seconds any collective may wait (default 60)")
    args = p.parse_args(argv)
    if args.nprocs < 1 or args.epochs < 1 or args.batch < 1:
        p.error("-n, --epochs and --batch must be at least 1")
    return args


def load_digits(seed):
    """The digits as float tensors, split 80/20 the same way on every rank
    (a permutation from the seed)."""
    import torch
    from sklearn.datasets import load_digits as sk_digits
    d = sk_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    cut = len(y) * 4 // 5
    return (x[perm[:cut]], y[perm[:cut]]), (x[perm[cut:]], y[perm[cut:]])


def train(rank, args, store_path):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler
    if args.backend == "mrc":
        import mrc.torch  # noqa: F401  (registers the backend)

    torch.set_num_threads(1)  # the ranks share the host's cores
    dist.init_process_group(
        args.backend, init_method="file://" + store_path, rank=rank,
        world_size=args.nprocs,
        timeout=datetime.timedelta(seconds=args.timeout))
    (xtr, ytr), (xte, yte) = load_digits(args.seed)
    sampler = DistributedSampler(TensorDataset(xtr, ytr), shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=args.batch,
                        sampler=sampler, drop_last=True)

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        losses, times = [], []
        for step, (x, y) in enumerate(loader):
            if args.steps and step >= args.steps:
                break
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            losses.append(loss.item())
        # The mean over every rank's batches (float64: the same sum in any
        # order for these few values).
        total = torch.tensor([sum(losses), len(losses)], dtype=torch.float64)
        dist.all_reduce(total)
        if rank == 0:
            print("epoch %d loss %.6f step %.3f ms"
                  % (epoch, total[0].item() / total[1].item(),
                     statistics.median(times) * 1e3), flush=True)

    if rank == 0:
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        print("backend %s ranks %d test accuracy %.4f"
              % (args.backend, args.nprocs, acc), flush=True)
    dist.destroy_process_group()


def main(argv):
    args = parse_args(argv)
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(train, args=(args, os.path.join(tmp, "store")),
                 nprocs=args.nprocs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
