"""AI reply drafts: a pluggable :class:`Drafter` and the offline one Murmur ships with.

The offline drafter is honest about what it knows. It proposes the workspace's own best
matching past human reply (TF-IDF cosine between the new inbound message and earlier
inbound messages that got a reply) when one is close enough, and otherwise a template for
the message's intent (question, complaint, praise, other) addressed to the author. It never
sends anything: a draft is only a proposal a person (or an automation) may respond with.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from core.errors import MurmurError
from core.settings import Settings

Intent = Literal["question", "complaint", "praise", "other"]
DraftSource = Literal["past_reply", "template", "llm"]

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "they",
        "them",
        "their",
        "his",
        "her",
        "so",
        "do",
        "does",
        "did",
        "just",
        "not",
        "no",
        "yes",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "have",
        "has",
        "had",
        "am",
        "im",
        "i'm",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "than",
        "then",
        "too",
        "very",
    ]
)


@dataclass(frozen=True)
class PastExchange:
    """An earlier inbound message of the workspace and the human reply it got."""

    inbound: str
    reply: str


@dataclass(frozen=True)
class DraftRequest:
    """What a drafter sees: the message to answer, who wrote it, and the workspace's history."""

    text: str
    author_handle: str
    author_name: str | None
    platform: str
    kind: str
    history: Sequence[PastExchange] = field(default_factory=tuple)


@dataclass(frozen=True)
class Draft:
    text: str
    source: DraftSource
    confidence: float  # 0..1


class Drafter(Protocol):
    """Anything that proposes a reply; it must not send or store anything itself."""

    def draft(self, request: DraftRequest) -> Draft: ...


# -- intent ------------------------------------------------------------------------------------

_COMPLAINT = re.compile(
    r"\b(broken|refund|terrible|worst|awful|horrible|angry|annoyed|disappointed|disappointing"
    r"|useless|scam|hate|unacceptable|ridiculous|bug|crash(?:es|ed|ing)?|error|fail(?:s|ed)?"
    r"|problem|issue|late|delayed|never arrived|not working|doesn'?t work|didn'?t work"
    r"|still waiting|charged twice|complain(?:t|ed|ing)?)\b"
)
_PRAISE = re.compile(
    r"\b(love|loved|loving|great|awesome|amazing|excellent|fantastic|brilliant|perfect|best"
    r"|thanks|thank you|thx|wonderful|beautiful|congrats|congratulations|nice|cool|kudos)\b"
    r"|[\u2764\U0001f389\U0001f60d\U0001f64f\U0001f44f\U0001f525]"
)
_QUESTION_START = re.compile(
    r"^(who|what|when|where|why|how|which|can|could|would|will|is|are|do|does|did|should"
    r"|have|has|any)\b"
)


def detect_intent(text: str) -> Intent:
    """A small rule set: complaint beats question beats praise; anything else is ``other``."""
    lowered = text.lower().strip()
    if _COMPLAINT.search(lowered):
        return "complaint"
    if "?" in lowered or _QUESTION_START.search(lowered):
        return "question"
    if _PRAISE.search(lowered):
        return "praise"
    return "other"


# -- similarity --------------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


def _tfidf(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    vector = {term: (1 + math.log(n)) * idf.get(term, 0.0) for term, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in vector.values()))
    return {term: v / norm for term, v in vector.items()} if norm else {}


def best_match(text: str, corpus: Sequence[str]) -> tuple[int, float] | None:
    """The index of the corpus text most similar to ``text`` (TF-IDF cosine) and its score."""
    query = Counter(tokens(text))
    if not query or not corpus:
        return None
    docs = [Counter(tokens(doc)) for doc in corpus]
    n = len(docs) + 1
    df: Counter[str] = Counter()
    for doc in [*docs, query]:
        df.update(doc.keys())
    idf = {term: math.log((n + 1) / (count + 1)) + 1 for term, count in df.items()}
    q = _tfidf(query, idf)
    best: tuple[int, float] | None = None
    for index, doc in enumerate(docs):
        d = _tfidf(doc, idf)
        score = sum(weight * d.get(term, 0.0) for term, weight in q.items())
        if best is None or score > best[1]:
            best = (index, score)
    return best


# -- the offline drafter -----------------------------------------------------------------------

TEMPLATES: dict[Intent, str] = {
    "question": (
        "Hi {handle}, thanks for your question! We're looking into it and will get back to "
        "you with an answer shortly."
    ),
    "complaint": (
        "Hi {handle}, we're sorry to hear about this. Could you send us a direct message with "
        "the details so we can put it right?"
    ),
    "praise": "Thank you so much, {handle}! We're really glad to hear it.",
    "other": "Hi {handle}, thanks for reaching out! We'll follow up soon.",
}
# How far a template can be trusted to fit: rules, not a model, so never high.
TEMPLATE_CONFIDENCE: dict[Intent, float] = {
    "question": 0.35,
    "complaint": 0.4,
    "praise": 0.5,
    "other": 0.2,
}


def mention(handle: str) -> str:
    handle = handle.strip().lstrip("@")
    return f"@{handle}" if handle else "there"


class OfflineDrafter:
    """Past human replies first, intent templates otherwise; no network, no model."""

    def __init__(self, threshold: float = 0.6) -> None:
        self.threshold = threshold

    def draft(self, request: DraftRequest) -> Draft:
        history = [h for h in request.history if h.inbound.strip() and h.reply.strip()]
        found = best_match(request.text, [h.inbound for h in history])
        if found is not None and found[1] >= self.threshold:
            index, score = found
            return Draft(history[index].reply, "past_reply", round(min(score, 1.0), 3))
        intent = detect_intent(request.text)
        text = TEMPLATES[intent].format(handle=mention(request.author_handle))
        return Draft(text, "template", TEMPLATE_CONFIDENCE[intent])


default_drafter: Drafter = OfflineDrafter()


# -- an OpenAI-compatible provider -------------------------------------------------------------

SYSTEM_PROMPT = (
    "You draft short, friendly replies for a brand's social media inbox. Answer in the "
    "language of the message, in at most three sentences, without promising anything the "
    "brand has not said. Reply with the text of the reply only."
)


class DrafterError(MurmurError, RuntimeError):
    """The configured drafting service did not give a usable answer."""


class OpenAICompatibleDrafter:
    """Drafts through any chat-completions API (``POST {base}/v1/chat/completions``) over httpx.

    Past human replies go in as examples, so the model writes in the brand's voice. When the
    service fails, the offline drafter answers instead (a draft is a proposal, never worth an
    error to the person asking for one), unless ``fallback`` is None.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        model: str = "gpt-4o-mini",
        timeout: float = 20.0,
        fallback: Drafter | None = default_drafter,
        examples: int = 5,
        confidence: float = 0.7,
    ) -> None:
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.fallback = fallback
        self.examples = examples
        self.confidence = confidence

    def _messages(self, request: DraftRequest) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": SYSTEM_PROMPT}]
        for past in list(request.history)[: self.examples]:
            messages.append({"role": "user", "content": past.inbound})
            messages.append({"role": "assistant", "content": past.reply})
        who = mention(request.author_handle)
        messages.append(
            {
                "role": "user",
                "content": f"A {request.kind} on {request.platform} from {who}:\n{request.text}",
            }
        )
        return messages

    def complete(self, request: DraftRequest) -> str:
        """The model's reply text; raises DrafterError when there is none."""
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body = {"model": self.model, "messages": self._messages(request), "temperature": 0.4}
        try:
            response = httpx.post(self.url, json=body, headers=headers, timeout=self.timeout)
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise DrafterError(f"drafting service failed: {exc}") from exc
        if not isinstance(text, str) or not text.strip():
            raise DrafterError("drafting service returned no text")
        return text.strip()

    def draft(self, request: DraftRequest) -> Draft:
        try:
            return Draft(self.complete(request), "llm", self.confidence)
        except DrafterError:
            if self.fallback is None:
                raise
            return self.fallback.draft(request)


def drafter_for(
    base_url: str | None, api_key: str | None = None, model: str = "gpt-4o-mini"
) -> Drafter:
    """The OpenAI-compatible drafter when a base URL is configured, else the offline one."""
    if not base_url:
        return default_drafter
    return OpenAICompatibleDrafter(base_url, api_key=api_key, model=model)


def configured_drafter(settings: Settings) -> Drafter:
    """The drafter ``settings`` configure (``drafter_for`` over their base URL, key and model)."""
    return drafter_for(settings.drafter_base_url, settings.drafter_api_key, settings.drafter_model)
