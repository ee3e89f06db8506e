"""A small BERT trained on masked-language modelling, written out in the shape of Hugging Face's
modelling code: word / position / token-type embeddings (padding_idx, a non-persistent
position_ids buffer, LayerNorm with eps=1e-12), an extended attention mask built with
torch.finfo(dtype).min, one attention layer in einsum with masked_fill and one through
F.scaled_dot_product_attention with a boolean attn_mask, GELU(approximate="tanh"), an MLM
head tied to the word embeddings, CrossEntropyLoss on -100-labelled tokens, AdamW with
weight-decay parameter groups (no decay for bias and LayerNorm), a linear warmup-then-decay
LambdaLR, HF's _init_weights through module.apply and .data, and masked-token accuracy
under torch.inference_mode."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _common import parse, share_init, write_log

PAD, CLS, SEP, MASK = 0, 1, 2, 3


class Config:
    vocab_size = 32
    hidden_size = 32
    num_attention_heads = 4
    intermediate_size = 64
    num_hidden_layers = 2
    max_position_embeddings = 24
    type_vocab_size = 2
    layer_norm_eps = 1e-12


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=PAD)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.register_buffer("position_ids",
                             torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        embeddings = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
                      + self.token_type_embeddings(token_type_ids))
        return self.LayerNorm(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, config, use_sdpa):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.use_sdpa = use_sdpa

    def transpose_for_scores(self, x):
        new_shape = x.size()[:-1] + (self.num_heads, self.head_size)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask, bool_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        if self.use_sdpa:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)
        else:
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_size)
            scores = scores + attention_mask
            probs = nn.functional.softmax(scores, dim=-1)
            context = torch.einsum("bhqk,bhkd->bhqd", probs, v)
        context = context.permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.num_heads * self.head_size,))


class BertLayer(nn.Module):
    def __init__(self, config, use_sdpa):
        super().__init__()
        self.attention = BertSelfAttention(config, use_sdpa)
        self.attention_output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = nn.GELU(approximate="tanh")
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.output_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states, attention_mask, bool_mask):
        attn = self.attention_output(self.attention(hidden_states, attention_mask, bool_mask))
        hidden_states = self.attention_norm(attn + hidden_states)
        ff = self.output(self.act(self.intermediate(hidden_states)))
        return self.output_norm(ff + hidden_states)


class BertForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.layer = nn.ModuleList(BertLayer(config, use_sdpa=i % 2 == 1)
                                   for i in range(config.num_hidden_layers))
        self.transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.weight = self.embeddings.word_embeddings.weight  # tied, as in HF
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def get_extended_attention_mask(self, attention_mask, dtype):
        extended = attention_mask[:, None, None, :].to(dtype=dtype)
        return (1.0 - extended) * torch.finfo(dtype).min

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        hidden = self.embeddings(input_ids, token_type_ids)
        extended = self.get_extended_attention_mask(attention_mask, hidden.dtype)
        bool_mask = attention_mask[:, None, None, :].bool()
        for layer in self.layer:
            hidden = layer(hidden, extended, bool_mask)
        hidden = self.transform_norm(F.gelu(self.transform(hidden), approximate="tanh"))
        logits = self.decoder(hidden) + self.bias
        loss = None
        if labels is not None:
            loss = nn.CrossEntropyLoss()(logits.view(-1, logits.size(-1)), labels.view(-1))
        return loss, logits


def make_batch(rng, n, max_len):
    """Sequences of a repeating pattern (so masked tokens are predictable), [CLS] ... [SEP]
    then padding; 20% of real tokens masked."""
    ids = np.full((n, max_len), PAD, np.int64)
    types = np.zeros((n, max_len), np.int64)
    for i in range(n):
        length = int(rng.integers(8, max_len - 1))
        start, step = int(rng.integers(4, 32)), int(rng.integers(1, 4))
        body = 4 + (start + step * np.arange(length - 2)) % 28
        ids[i, :length] = np.concatenate([[CLS], body, [SEP]])
        types[i, length // 2:length] = 1
    real = (ids > SEP)
    chosen = real & (rng.random(ids.shape) < 0.2)
    labels = np.where(chosen, ids, -100)
    inputs = np.where(chosen, MASK, ids)
    return (torch.from_numpy(inputs), torch.from_numpy((ids != PAD).astype(np.int64)),
            torch.from_numpy(types), torch.from_numpy(labels))


def main():
    args = parse(steps=40, batch_size=16, lr=1e-2, warmup=4)
    rng = np.random.default_rng(31)
    config = Config()
    model = BertForMaskedLM(config)
    share_init(torch, [model], args.init)
    assert "embeddings.position_ids" not in model.state_dict()
    no_decay = ["bias", "LayerNorm.weight", "norm.weight"]
    groups = [
        {"params": [p for n, p in model.named_parameters()
                    if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters()
                    if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-6)

    def lr_lambda(step):
        if step < args.warmup:
            return float(step + 1) / float(max(1, args.warmup))
        return max(0.0, float(args.steps - step) / float(max(1, args.steps - args.warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    losses, lrs = [], []
    model.train()
    for _ in range(args.steps):
        input_ids, attention_mask, token_type_ids, labels = make_batch(
            rng, args.batch_size, config.max_position_embeddings)
        loss, _ = model(input_ids, attention_mask, token_type_ids, labels=labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.inference_mode():
        input_ids, attention_mask, token_type_ids, labels = make_batch(
            rng, 64, config.max_position_embeddings)
        _, logits = model(input_ids, attention_mask, token_type_ids)
        masked = labels != -100
        acc = (logits.argmax(-1)[masked] == labels[masked]).float().mean().item()
    write_log(args.log, losses, lr=lrs, accuracy=acc)


if __name__ == "__main__":
    main()
