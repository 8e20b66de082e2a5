"""compute_numerics (references, comparisons, attention diagnostics) and the after-numerics reasons."""

from __future__ import annotations

from collections.abc import MutableMapping
from time import perf_counter

import numpy as np

from explorer.analysis.metrics import compare, readonly, rounded
from explorer.analysis.reference import NONFINITE_LOGITS, eligibility, head_attention, narrowed_query_plan
from explorer.analysis.result import Fp64Diagnostic, NarrowedQuery, Numerics, TensorFacts
from explorer.analysis.score import packet_score
from explorer.analysis.shared_references import references
from explorer.packet.dtypes import round_bits
from explorer.packet.model import Admission, Reason

LAST_ROW_MISMATCH = "last_row_mismatch"
NONFINITE_INPUTS_REASON = "nonfinite_inputs"
NONFINITE_COMPARISON = "nonfinite_comparison"
# The tensors a head's reference reads; a NaN or infinity in them makes heads ineligible.
REFERENCE_INPUTS = ("queries", "storedKeys", "storedValues")

PRIMARY_LABEL = "primary reference: original-Q FP32 softmax attention (output vs reference)"
FP64_LABEL = "FP64 diagnostic of the reference's own rounding (not a replacement reference)"
FP64_REFERENCE_ERROR_LABEL = "primary FP32 reference vs the same formula evaluated in FP64"
FP64_OUTPUT_ERROR_LABEL = "output vs the same formula evaluated in FP64 (diagnostic, not the reference)"


def rounded_label(dtype: str) -> str:
    if dtype == "float32":
        return "output vs primary reference in float32 (identity: float32 needs no rounding)"
    return f"output vs primary reference rounded (RNE) to the output dtype {dtype}; ULP in {dtype} units"


def kernel_rounded_label(dtype: str) -> str:
    return (
        f"output vs primary reference rounded (RNE) to the record's kernelOutputDType {dtype}; "
        f"ULP in {dtype} units between the output rounded to {dtype} and the rounded reference"
    )


def narrowed_labels(dtype: str) -> tuple[str, str, str, str]:
    """Labels of the counterfactual and of its comparison, difference and query-rounding blocks."""
    path = f"float32 -> {dtype} -> float32"
    return (
        f"narrowed-Q counterfactual ({path})",
        f"output vs narrowed-Q counterfactual reference ({path}; a counterfactual, not the reference)",
        f"narrowed-Q counterfactual reference ({path}) vs primary reference",
        f"narrowed queries q' ({path}) vs original queries q",
    )


def compute_numerics(
    admission: Admission, facts: TensorFacts, timings: MutableMapping[str, float] | None = None
) -> Numerics:
    """Every reference, comparison and diagnostic of docs/report.md for a packet whose numerics are allowed."""
    started = perf_counter()
    tensors = admission.tensors
    queries = tensors["queries"].values[0, :, 0, :]
    kv_heads = tensors["storedKeys"].shape[1]
    output = tensors["output"]
    output_values = output.values[0, :, 0, :]
    scale = admission.scale
    held = (facts.nonfinite[name].per_head_token.any(axis=(1, 2)) for name in REFERENCE_INPUTS)  # NaN or inf per head
    eligible = readonly(eligibility(*held))

    narrow_dtype, narrow_reason = narrowed_query_plan(tensors["queries"].dtype, tensors["storedKeys"].dtype)
    shared = references(tensors, scale, eligible, narrow_dtype)  # a partner with the same inputs computed them
    primary, reference, exact = shared.primary, shared.primary.reference, shared.exact
    narrowed_queries, narrowed_reference = shared.narrowed_queries, shared.narrowed_reference
    attention = head_attention(primary, eligible, kv_heads)
    referenced = perf_counter()

    primary_comparison = compare(PRIMARY_LABEL, output_values, reference, eligible)
    rounded_to_output = rounded(
        rounded_label(output.dtype), output.dtype, output_values, output.bits[0, :, 0, :], reference, eligible
    )
    kernel_dtype = admission.kernel_output_dtype
    rounded_to_kernel = None
    if kernel_dtype != output.dtype:
        rounded_to_kernel = rounded(
            kernel_rounded_label(kernel_dtype),
            kernel_dtype,
            output_values,
            round_bits(output_values, kernel_dtype),
            reference,
            eligible,
        )
    narrowed_query = None
    if narrow_dtype is not None:
        label, comparison_label, difference_label, query_label = narrowed_labels(narrow_dtype)
        comparisons = (
            compare(comparison_label, output_values, narrowed_reference, eligible),
            compare(difference_label, narrowed_reference, reference, eligible, actual_computed=True),
            compare(query_label, narrowed_queries, queries, eligible, reference_computed=False),
        )
        narrowed_query = NarrowedQuery(label, narrow_dtype, *comparisons, narrowed_queries, narrowed_reference)
    fp64 = Fp64Diagnostic(
        label=FP64_LABEL,
        reference_error=compare(FP64_REFERENCE_ERROR_LABEL, reference, exact, eligible, actual_computed=True),
        output_error=compare(FP64_OUTPUT_ERROR_LABEL, output_values, exact, eligible),
        reference=exact,
    )
    floors = tuple(block.linf for block in fp64.reference_error.per_head)
    score = packet_score(primary_comparison.abs_error, reference, floors, output.dtype)
    if timings is not None:
        timings["reference"] = referenced - started
        timings["comparisons"] = perf_counter() - referenced
    narrowed = (narrowed_query, narrow_reason)  # the counterfactual, or why there is none
    weights = readonly(primary.weights)
    return Numerics(
        eligible, primary_comparison, rounded_to_output, rounded_to_kernel, *narrowed, fp64, attention, weights, score
    )


def _nonfinite_sources(facts: TensorFacts, numerics: Numerics) -> list[str]:
    """Names of the output and of every computed reference holding a NaN or infinity (eligible heads only)."""
    eligible = numerics.eligible
    sources = []
    if facts.nonfinite["output"].total:
        sources.append("output")
    overflowed = [a.query_head for a in numerics.attention if a.undefined_reason == NONFINITE_LOGITS]
    if overflowed:
        sources.append(f"primary logits (overflow in query heads {overflowed})")
    computed = {
        "primary reference": numerics.primary.reference,
        f"reference rounded to {numerics.rounded_to_output.dtype}": numerics.rounded_to_output.comparison.reference,
        "FP64 reference": numerics.fp64.reference,
    }
    if numerics.rounded_to_kernel is not None:
        kernel = numerics.rounded_to_kernel
        computed[f"reference rounded to kernel dtype {kernel.dtype}"] = kernel.comparison.reference
    if numerics.narrowed_query is not None:
        computed["narrowed queries"] = numerics.narrowed_query.query_values
        computed["narrowed-Q reference"] = numerics.narrowed_query.reference
    sources += [name for name, array in computed.items() if not np.isfinite(array[eligible]).all()]
    return sources


def after_numerics_reasons(facts: TensorFacts, numerics: Numerics) -> tuple[Reason, ...]:
    """The inconclusive reasons of docs/packet-format.md, Inconclusive codes, in table order."""
    reasons = []
    keys, values = facts.last_row_keys.mismatched, facts.last_row_values.mismatched
    if keys or values:
        said = (
            f"the stored row at token T-1 differs bitwise from the incoming row: {keys} of "
            f"{facts.last_row_keys.compared} key elements, {values} of {facts.last_row_values.compared} value elements"
        )
        reasons.append(Reason(LAST_ROW_MISMATCH, said))
    inputs = [name for name in REFERENCE_INPUTS if facts.nonfinite[name].total]
    if inputs:
        ineligible = np.flatnonzero(~numerics.eligible).tolist()
        said = f"NaN or infinity in {', '.join(inputs)}; query heads {ineligible} have no reference"
        reasons.append(Reason(NONFINITE_INPUTS_REASON, said))
    sources = _nonfinite_sources(facts, numerics)
    if sources:
        reasons.append(Reason(NONFINITE_COMPARISON, f"NaN or infinity in: {', '.join(sources)}"))
    return tuple(reasons)
