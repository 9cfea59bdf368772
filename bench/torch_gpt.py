#!/usr/bin/env python3
"""bench/torch_gpt.py: PyTorch CPU fp32 training speed of the engine's GPT
(experiments/gpt.c: token + position embeddings, pre-LayerNorm blocks with
causal attention and a GELU(tanh) MLP d -> 4d -> d, final LayerNorm, untied
lm_head with bias, mean cross-entropy, AdamW), same shapes, random tokens.
bench/train runs it beside the emulated runs and prints the ratio.

usage: bench/torch_gpt.py n_layer d_model n_head seq_len batch vocab steps threads
prints one line: tokens/s <value>   (exit 3 when torch does not import)
"""
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception as e:  # no torch: bench/train prints a note
    print(f"torch unavailable: {e}")
    sys.exit(3)


class Block(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh = nh
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, nl, d, nh, T, V):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, nh) for _ in range(nl))
        self.lnf, self.head = nn.LayerNorm(d), nn.Linear(d, V)

    def forward(self, idx, tgt):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.view(-1))


def main():
    if len(sys.argv) != 9:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        sys.exit(2)
    nl, d, nh, T, B, V, steps, threads = (int(a) for a in sys.argv[1:])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = GPT(nl, d, nh, T, V)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.1)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))
    for s in range(steps + 2):  # two warm-up steps, then the timed ones (mean, as exmy train reports)
        if s == 2:
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = m(idx, tgt)
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    print(f"tokens/s {B * T * steps / dt:.1f} params {sum(p.numel() for p in m.parameters())}")


if __name__ == "__main__":
    main()
