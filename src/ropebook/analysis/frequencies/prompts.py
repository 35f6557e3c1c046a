"""The prompts of the frequency-usage chapter: held-out passages of a corpus, fixed texts
(Dante, the Daodejing) cut into windows, and lines of arithmetic: one list of token ids per
input domain (Barbero et al. 2025, App. E.2, Fig. 19)."""

from __future__ import annotations

import numpy as np

# The opening of Dante's *Inferno* (Canto I, lines 1–39) and chapters 1–3 of the *Daodejing*,
# both public domain, typed in from memory of the standard texts (minor orthographic variants are
# possible). They are only prompts: what matters is that the model never saw these languages.
DANTE = """Nel mezzo del cammin di nostra vita
mi ritrovai per una selva oscura,
ché la diritta via era smarrita.
Ahi quanto a dir qual era è cosa dura
esta selva selvaggia e aspra e forte
che nel pensier rinova la paura!
Tant' è amara che poco è più morte;
ma per trattar del ben ch'i' vi trovai,
dirò de l'altre cose ch'i' v'ho scorte.
Io non so ben ridir com' i' v'intrai,
tant' era pien di sonno a quel punto
che la verace via abbandonai.
Ma poi ch'i' fui al piè d'un colle giunto,
là dove terminava quella valle
che m'avea di paura il cor compunto,
guardai in alto e vidi le sue spalle
vestite già de' raggi del pianeta
che mena dritto altrui per ogne calle.
Allor fu la paura un poco queta,
che nel lago del cor m'era durata
la notte ch'i' passai con tanta pieta.
E come quei che con lena affannata,
uscito fuor del pelago a la riva,
si volge a l'acqua perigliosa e guata,
così l'animo mio, ch'ancor fuggiva,
si volse a retro a rimirar lo passo
che non lasciò già mai persona viva.
Poi ch'èi posato un poco il corpo lasso,
ripresi via per la piaggia diserta,
sì che 'l piè fermo sempre era 'l più basso.
Ed ecco, quasi al cominciar de l'erta,
una lonza leggera e presta molto,
che di pel macolato era coverta;
e non mi si partia dinanzi al volto,
anzi 'mpediva tanto il mio cammino,
ch'i' fui per ritornar più volte vòlto.
Temp' era dal principio del mattino,
e 'l sol montava 'n sù con quelle stelle
ch'eran con lui quando l'amor divino
"""


DAODEJING = (
    "道可道，非常道。名可名，非常名。無名天地之始；有名萬物之母。故常無欲，以觀其妙；常有欲，"
    "以觀其徼。此兩者，同出而異名，同謂之玄。玄之又玄，衆妙之門。"
    "天下皆知美之為美，斯惡已。皆知善之為善，斯不善已。故有無相生，難易相成，長短相形，高下相傾，"
    "音聲相和，前後相隨。是以聖人處無為之事，行不言之教；萬物作焉而不辭，生而不有，為而不恃，"
    "功成而弗居。夫唯弗居，是以不去。"
    "不尚賢，使民不爭；不貴難得之貨，使民不為盜；不見可欲，使民心不亂。是以聖人之治，虛其心，"
    "實其腹，弱其志，強其骨。常使民無知無欲。使夫智者不敢為也。為無為，則無不治。"
)


CHINESE = "Chinese (Daodejing)"


def pick_documents(n_docs: int, n: int) -> list[tuple[int, int, int]]:
    """``n`` picks evenly spaced over ``n_docs`` sorted documents: ``(document, repeat, count)``.

    With fewer documents than picks a document is picked ``count`` times; its ``repeat``-th pick
    (0-based) starts at the ``(repeat + 1) / (count + 1)`` point of the text.
    """
    picks = [(i * n_docs) // n for i in range(n)]
    return [(d, picks[:i].count(d), picks.count(d)) for i, d in enumerate(picks)]


def passages(domain: str, n: int, length: int) -> list[tuple[str, np.ndarray]]:
    """``n`` passages of ``length`` tokens (BOS first) from documents spread over the test split.

    Documents are sorted by name and picked evenly spaced (:func:`pick_documents`); a passage
    starts at the first line break after the document's midpoint (or after its ``r/(c+1)``
    point when one document gives several passages).
    """
    from ropebook import data

    docs = sorted(data.load_texts(domain, "test"))
    chosen = []
    for index, repeat, count in pick_documents(len(docs), n):
        name, text = docs[index]
        start = text.find("\n", len(text) * (repeat + 1) // (count + 1))
        start = 0 if start < 0 else start + 1
        ids = np.asarray(data.encode(text[start : start + 12 * length], bos=True))[:length]
        chosen.append((name, ids))
    return chosen


def windows(text: str, n: int, length: int) -> list[np.ndarray]:
    """Up to ``n`` consecutive windows of ``length - 1`` tokens of ``text``, each after a BOS."""
    from ropebook import data

    body = np.asarray(data.encode(text, bos=False))
    bos = np.asarray(data.encode("", bos=True))
    step = length - len(bos)
    return [
        np.concatenate([bos, body[i : i + step]]) for i in range(0, len(body) - step + 1, step)
    ][:n]


def arithmetic_text(rng: np.random.Generator, lines: int = 64) -> str:
    """``lines`` lines ``a+b=c`` with six-digit ``a`` and ``b`` drawn from ``rng``."""
    return "".join(f"{a}+{b}={a + b}\n" for a, b in rng.integers(100_000, 1_000_000, (lines, 2)))


def arithmetic(n: int, length: int, seed: int) -> list[np.ndarray]:
    """``n`` prompts of additions (:func:`arithmetic_text`), cut to ``length`` tokens after BOS."""
    from ropebook import data

    rng = np.random.default_rng(seed)
    return [np.asarray(data.encode(arithmetic_text(rng), bos=True))[:length] for _ in range(n)]


def lossless(text: str) -> bool:
    """Whether the book's tokenizer round-trips ``text`` exactly."""
    from ropebook import data

    return data.decode(data.encode(text, bos=False)) == text


def domain_prompts(
    shakespeare: list[np.ndarray], n: int, length: int, seed: int
) -> dict[str, list[np.ndarray]]:
    """The domains of the input-domain comparison, each ``n`` prompts of ``length`` tokens:
    the given Shakespeare prompts, held-out Python, arithmetic (``seed``), Dante and — only if
    the tokenizer encodes it losslessly — the Daodejing. Domains without a prompt are dropped."""
    domains = {
        "Shakespeare": shakespeare,
        "Python": [ids for _, ids in passages("python", n, length)],
        "arithmetic": arithmetic(n, length, seed),
        "Italian (Dante)": windows(DANTE, n, length),
    }
    if lossless(DAODEJING):
        domains[CHINESE] = windows(DAODEJING, n, length)
    return {name: prompts for name, prompts in domains.items() if len(prompts)}
