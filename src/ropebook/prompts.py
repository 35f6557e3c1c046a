"""The prompts a real checkpoint reads: passages of the book's held-out Shakespeare, or a built-in
text where the book's data is absent, in the checkpoint's own tokenizer.

:func:`prompt_texts` picks the passages, :func:`tokenize` cuts them into token ids (the
checkpoint's tokenizer, or UTF-8 bytes for a folder without one), and :func:`read_checkpoint`
does both for the checkpoint a chapter's ``checkpoint`` parameter names. The chapters that read
SmolLM2 and ``python -m ropebook analyse`` (:mod:`ropebook.analyse`) share them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ropebook import capture
from ropebook.analysis import frequencies as fq

# a folder without one of these has no tokenizer (transformers 5 would build an empty one)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model")
BUILTIN_SOURCE = "built-in text (Shakespeare, Sonnets 18, 29, 73, 116)"
BUILTIN_TEXT = """Shall I compare thee to a summer's day?
Thou art more lovely and more temperate:
Rough winds do shake the darling buds of May,
And summer's lease hath all too short a date;
Sometime too hot the eye of heaven shines,
And often is his gold complexion dimm'd;
And every fair from fair sometime declines,
By chance or nature's changing course untrimm'd;
But thy eternal summer shall not fade,
Nor lose possession of that fair thou ow'st;
Nor shall death brag thou wander'st in his shade,
When in eternal lines to time thou grow'st:
So long as men can breathe or eyes can see,
So long lives this, and this gives life to thee.
When, in disgrace with fortune and men's eyes,
I all alone beweep my outcast state,
And trouble deaf heaven with my bootless cries,
And look upon myself and curse my fate,
Wishing me like to one more rich in hope,
Featur'd like him, like him with friends possess'd,
Desiring this man's art and that man's scope,
With what I most enjoy contented least;
Yet in these thoughts myself almost despising,
Haply I think on thee, and then my state,
Like to the lark at break of day arising
From sullen earth, sings hymns at heaven's gate;
For thy sweet love remember'd such wealth brings
That then I scorn to change my state with kings.
That time of year thou mayst in me behold
When yellow leaves, or none, or few, do hang
Upon those boughs which shake against the cold,
Bare ruin'd choirs, where late the sweet birds sang.
In me thou see'st the twilight of such day
As after sunset fadeth in the west,
Which by and by black night doth take away,
Death's second self, that seals up all in rest.
In me thou see'st the glowing of such fire
That on the ashes of his youth doth lie,
As the death-bed whereon it must expire,
Consum'd with that which it was nourish'd by.
This thou perceiv'st, which makes thy love more strong,
To love that well which thou must leave ere long.
Let me not to the marriage of true minds
Admit impediments. Love is not love
Which alters when it alteration finds,
Or bends with the remover to remove.
O no! it is an ever-fixed mark
That looks on tempests and is never shaken;
It is the star to every wand'ring bark,
Whose worth's unknown, although his height be taken.
Love's not Time's fool, though rosy lips and cheeks
Within his bending sickle's compass come;
Love alters not with his brief hours and weeks,
But bears it out even to the edge of doom.
If this be error and upon me prov'd,
I never writ, nor no man ever lov'd.
"""


def prompt_texts(n: int, tokens: int) -> tuple[str, list[str]]:
    """``(source, texts)``: ``n`` passages of the book's held-out Shakespeare (documents spread
    evenly, each from a line break after its midpoint, about ``12 · tokens`` characters), or,
    if the book's data is not available, ``n`` overlapping windows of :data:`BUILTIN_TEXT`."""
    try:
        from ropebook import data

        docs = sorted(data.load_texts("shakespeare", "test"))
    except Exception:  # noqa: BLE001 - no data folder, no manifest, not fetched: fall back
        docs = []
    if docs:
        texts = []
        for index, repeat, count in fq.pick_documents(len(docs), n):
            text = docs[index][1]
            start = text.find("\n", len(text) * (repeat + 1) // (count + 1))
            start = 0 if start < 0 else start + 1
            texts.append(text[start : start + 12 * tokens])
        return "the book's held-out Shakespeare (test split)", texts
    lines = BUILTIN_TEXT.splitlines(keepends=True)
    step = max(1, (len(lines) - 1) // max(n, 1))
    texts = ["".join(lines[(i * step) % len(lines) :]) for i in range(n)]
    return BUILTIN_SOURCE, texts


def tokenize(path: Path | str, texts: Sequence[str], tokens: int, vocab_size: int):
    """Token ids of each text, cut to ``tokens``: with the checkpoint's own tokenizer (BOS
    included) if its folder has one, else the texts' UTF-8 bytes modulo ``vocab_size`` (a
    stand-in for random or tokenizer-less checkpoints, said so in the summary)."""
    tokenizer = None
    if any((Path(path) / name).is_file() for name in TOKENIZER_FILES):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if tokenizer is not None:
        ids = [np.asarray(tokenizer(t, add_special_tokens=True)["input_ids"]) for t in texts]
        how = f"the checkpoint's tokenizer ({type(tokenizer).__name__})"
    else:
        ids = [np.frombuffer(t.encode(), np.uint8).astype(np.int64) % vocab_size for t in texts]
        how = "UTF-8 bytes modulo the vocabulary (the folder has no tokenizer)"
    ids = [i[:tokens] for i in ids if len(i) >= 2]
    if not ids:
        raise ValueError("no prompt has 2 or more tokens")
    return how, ids


def read_checkpoint(checkpoint: str, profile: str, n: int, tokens: int):
    """The checkpoint a chapter's ``checkpoint`` parameter names
    (:func:`ropebook.real_model.resolve`), loaded by :func:`ropebook.capture.load`, and ``n``
    passages of :func:`prompt_texts` in its own tokenizer, cut to ``tokens``: ``(model, ids)``,
    or ``None`` where the parameter names no checkpoint (``none``; ``profile`` on smoke)."""
    from ropebook import real_model

    folder = real_model.resolve(checkpoint, profile)
    if folder is None:
        return None
    model = capture.load(folder)
    _, texts = prompt_texts(n, tokens)
    _, ids = tokenize(folder, texts, tokens, model.config.get_text_config().vocab_size)
    return model, ids
