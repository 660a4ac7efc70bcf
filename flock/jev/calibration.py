"""Temperature scaling and the calibration error it is judged by.

A logistic regression's raw probabilities are usually over- or under-confident, depending
on its regularisation and on how separable its training data happens to be. One scalar
temperature T, fitted on examples the model never saw, divides the logits so that the top
probability means what it says: of the answers given at 0.9, about nine in ten are right.
That matters because the chatroom acts on the band (a tag "stands" above the question's
high threshold), so a confident wrong answer costs more than an unsure one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq, minimize_scalar

from flock.jev.serving import softmax

# Bounds keep a degenerate held-out set (all correct, or tiny) from driving T to 0 or
# infinity, which would turn every answer into a certainty or into a uniform guess.
MIN_TEMPERATURE = 0.05
MAX_TEMPERATURE = 20.0
ECE_BINS = 10


def _nll(logits: NDArray[np.float64], targets: NDArray[np.intp], temperature: float) -> float:
    probs = softmax(logits, temperature)
    picked = probs[np.arange(len(targets)), targets]
    return float(-np.log(np.clip(picked, 1e-12, None)).mean())


def _mean_confidence(logits: NDArray[np.float64], temperature: float) -> float:
    return float(softmax(logits, temperature).max(axis=1).mean())


def fit_temperature(logits: NDArray[np.float64], targets: NDArray[np.intp]) -> float:
    """The temperature minimising the negative log-likelihood of ``targets``, capped so the
    mean top probability on these examples stays at or below their Laplace-smoothed
    accuracy, (right + 1) / (n + 2).

    The cap matters when the held-out set is small and all (or nearly all) right: plain NLL
    then drives T to its lower bound and every answer to probability 1, though 45 examples
    cannot vouch for more than about 98%. On a large dev set it moves confidence by a point
    at most, and towards caution, which is the cheap side: an unsure tag falls back to the
    crow's own header, a wrongly confident one overrides it.
    """
    if len(targets) == 0:
        return 1.0
    # Search on log T: the likelihood is far better behaved there, and T stays positive.
    result = minimize_scalar(
        lambda log_t: _nll(logits, targets, float(np.exp(log_t))),
        bounds=(np.log(MIN_TEMPERATURE), np.log(MAX_TEMPERATURE)),
        method="bounded",
    )
    temperature = float(np.exp(result.x))
    right = int((logits.argmax(axis=1) == targets).sum())
    cap = (right + 1) / (len(targets) + 2)
    if _mean_confidence(logits, temperature) <= cap:
        return temperature
    if _mean_confidence(logits, MAX_TEMPERATURE) > cap:
        return MAX_TEMPERATURE
    # Mean confidence falls as T rises, so the crossing between here and the bound is unique.
    return float(brentq(lambda t: _mean_confidence(logits, t) - cap, temperature, MAX_TEMPERATURE))


def expected_calibration_error(
    confidences: NDArray[np.float64], correct: NDArray[np.bool_], bins: int = ECE_BINS
) -> float:
    """Top-label ECE over ``bins`` equal-width bins: the support-weighted mean gap
    between how often the answers in a bin were right and how sure they were."""
    if len(confidences) == 0:
        return 0.0
    # A confidence of exactly 1.0 belongs in the last bin, not one past it.
    index = np.minimum((confidences * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        members = index == b
        if members.any():
            gap = abs(correct[members].mean() - confidences[members].mean())
            total += members.sum() / len(confidences) * gap
    return float(total)
