"""`admit(path)`: every check of docs/packet-format.md, all problems reported at once, as an Admission.

packet.json is read first (a refusal there ends admission); then the section 2 field rules, the size limits,
the files (aliases refused, each read and hashed once), the snapshot (interpreted only when its file verified)
and the section 3 and 4 cross-checks. A check whose input is already broken is skipped (section 6 cascades), so
each fault is reported once. Never computes numerics or imports UI code.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from typing import Any

from explorer.foundations.bounded import quoted, shown_int, shown_list
from explorer.packet.files import FileOutcome, FileRequest, PacketFile, open_packet, verify_files
from explorer.packet.jsonparse import parse_json_object
from explorer.packet.model import TENSOR_NAMES, Admission, NativeTensor, Problem, Reason
from explorer.packet.schema import Descriptor, check_descriptor, payload_limits, pointer, tensor_geometry
from explorer.packet.snapshot import PRESENCE_FLAGS, Snapshot, check_snapshot, visible_range_problems

METADATA_KEY = "/metadata"
SUPPORTED_ATTENTION = "full"
UNSUPPORTED_GEOMETRY_FLAGS = ("isBidirectional", "sharesKV", "mtpEnabled")
SUPPORTED_PHASES = ("decode", "chained_decode")
BACKEND_DISPATCHES = {"paged": ("paged_fixed_decode", "paged_segmented_decode"), "contiguous": ("contiguous_sdpa",)}
SUPPORTED_RECORD_INDEX = 0
SUPPORTED_OWNER_COUNT = 1
SUPPORTED_BATCH = {"batchSize": 1, "batchIndex": 0, "inputWidth": 1}
CPU_MAX_QUERY_HEADS = 256
CPU_MAX_HEAD_DIM = 1024
CPU_MAX_MULTIPLY_ADDS = 100_000_000
CONFIRMED_OUTCOME = "confirmed"
COMPLETED_EVALUATION = "completed"


def _problem_order(problem: Problem) -> tuple[str, bool, str]:
    return problem.code, problem.field is not None, problem.field or ""


def _file_requests(descriptor: Descriptor, not_opened: frozenset[str]) -> list[FileRequest]:
    """The metadata file and every tensor file that may be opened; lengths only where they may be read."""
    requests = []
    if descriptor.metadata_file is not None:
        requests.append(
            FileRequest(
                METADATA_KEY,
                descriptor.metadata_file,
                descriptor.metadata_byte_count,
                descriptor.metadata_sha256,
                json_file=True,
            )
        )
    for name, tensor in descriptor.tensors.items():
        if tensor.file is None or name in not_opened:
            continue
        # Read only at a length that the shape and dtype vouch for (so within the checked limits).
        readable = tensor.declared_size is not None and tensor.byte_count == tensor.declared_size
        requests.append(
            FileRequest(pointer("tensors", name), tensor.file, tensor.byte_count if readable else None, tensor.sha256)
        )
    return requests


def _decoded_text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _interpret_metadata(
    outcome: FileOutcome | None, descriptor: Descriptor
) -> tuple[tuple[Problem, ...], Any | None, Snapshot | None]:
    """Parse and check the snapshot when its file verified; otherwise it is not interpreted."""
    if outcome is None or not outcome.verified:
        return (), None, None
    parsed = parse_json_object(outcome.data)
    if parsed.error is not None:
        message = f"the metadata file is not valid JSON: {parsed.error}"
        return (Problem("json_invalid", f"{METADATA_KEY}/file", message),), None, None
    snapshot = check_snapshot(parsed.value, descriptor)
    return snapshot.problems, parsed.value, snapshot


def _tensors(descriptor: Descriptor, outcomes: Mapping[str, FileOutcome]) -> dict[str, NativeTensor] | None:
    """The six native tensors, when every file verified (geometry is checked by the caller)."""
    from explorer.packet.dtypes import bits_from_buffer  # numpy loads only now (explorer/launch.py)

    files = {name: outcomes.get(pointer("tensors", name)) for name in TENSOR_NAMES}
    if not all(outcome is not None and outcome.verified for outcome in files.values()):
        return None

    def native(name: str) -> NativeTensor:
        entry, outcome = descriptor.tensors[name], files[name]
        bits = bits_from_buffer(outcome.data, entry.dtype, entry.shape)
        return NativeTensor(name, entry.dtype, entry.shape, entry.byte_count, outcome.sha256, bits)

    return {name: native(name) for name in TENSOR_NAMES}  # their float32 values are made on first use


def _applying(*conditions: tuple[bool, str]) -> str:
    """The descriptions of the conditions that apply, joined ("" when none does)."""
    return "; ".join(description for applies, description in conditions if applies)


def _reasons(descriptor: Descriptor, snapshot: Snapshot, geometry: Mapping[str, int]) -> tuple[Reason, ...]:
    """Inconclusive reasons of section 6 tables 1 and 2, in table order (only for a packet with no refusal)."""
    record, sample, fields = snapshot.record, snapshot.sample, descriptor.geometry_fields
    backend = descriptor.identity["backend"]
    qh, d, t = geometry["queryHeads"], geometry["headDim"], geometry["tokens"]
    missing_tokens = [key for key in ("seedToken", "targetToken") if sample[key] is None]
    owners, dispatch, evaluation = snapshot.expected_owner_count, record["dispatch"], descriptor.evaluation_status
    table = {
        "owner_selection_unsupported": _applying(
            (owners != SUPPORTED_OWNER_COUNT, f"expectedOwnerCount is {owners}"),
            (snapshot.record_count != 1, f"the snapshot holds {snapshot.record_count} records"),
            (descriptor.record_index != SUPPORTED_RECORD_INDEX, f"recordIndex is {descriptor.record_index}"),
        ),
        "geometry_unsupported": _applying(
            (fields["attention"] != SUPPORTED_ATTENTION, f"attention is {quoted(fields['attention'])}"),
            *((fields[flag], f"{flag} is true") for flag in UNSUPPORTED_GEOMETRY_FLAGS),
            *((record[flag], f"{flag} is true") for flag in PRESENCE_FLAGS),
            *((record[key] != value, f"{key} is {shown_int(record[key])}") for key, value in SUPPORTED_BATCH.items()),
            (record["phase"] not in SUPPORTED_PHASES, f"phase is {quoted(record['phase'])}"),
            (dispatch not in BACKEND_DISPATCHES[backend], f"dispatch {quoted(dispatch)} is not a {backend} dispatch"),
        ),
        "cpu_bound_exceeded": _applying(
            (qh > CPU_MAX_QUERY_HEADS, f"{qh} query heads (more than {CPU_MAX_QUERY_HEADS})"),
            (d > CPU_MAX_HEAD_DIM, f"head dimension {d} (more than {CPU_MAX_HEAD_DIM})"),
            (
                2 * qh * t * d > CPU_MAX_MULTIPLY_ADDS,
                f"2*QH*T*D = {2 * qh * t * d:,} multiply-add terms (more than {CPU_MAX_MULTIPLY_ADDS:,})",
            ),
        ),
        "forward_failed": _applying((not sample["forwardSucceeded"], "forwardSucceeded is false")),
        "sample_not_confirmed": _applying(
            (sample["sampleOutcome"] != CONFIRMED_OUTCOME, f"sampleOutcome is {sample['sampleOutcome']!r}")
        ),
        "selected_forwards_not_one": _applying(
            (sample["selectedForwards"] != 1, f"selectedForwards is {sample['selectedForwards']}")
        ),
        "snapshot_refusals": _applying(
            (bool(sample["refusals"]), f"the snapshot records refusals {shown_list(sorted(sample['refusals']))}")
        ),
        "sample_tokens_missing": _applying((bool(missing_tokens), f"{' and '.join(missing_tokens)} absent or null")),
        "evaluation_not_completed": _applying(
            (evaluation != COMPLETED_EVALUATION, f"evaluationStatus is {evaluation!r}")
        ),
    }
    return tuple(Reason(code, message) for code, message in table.items() if message)


def admit(path: str | bytes | os.PathLike) -> Admission:
    """Admit the packet at `path` (a directory or its packet.json; str or bytes). Never raises for packet content."""
    given = os.fsdecode(path)
    with open_packet(given) as packet:
        return _admit_open(given, packet)


def _admit_open(given: str, packet: PacketFile) -> Admission:
    if packet.problem is not None:
        return Admission(given, None, None, (packet.problem,), ())
    parsed = parse_json_object(packet.data)
    if parsed.error is not None:
        problem = Problem("json_invalid", None, f"packet.json is not valid JSON: {parsed.error}")
        return Admission(given, packet.sha256, None, (problem,), (), packet_text=parsed.text)
    descriptor = check_descriptor(parsed.value)
    limit_problems, not_opened = payload_limits(descriptor.tensors)
    geometry_problems, geometry = tensor_geometry(descriptor)
    outcomes = verify_files(packet.root, packet.identity, _file_requests(descriptor, not_opened))
    metadata = outcomes.get(METADATA_KEY)
    snapshot_problems, snapshot_value, snapshot = _interpret_metadata(metadata, descriptor)
    refusals = sorted(
        [
            *descriptor.problems,
            *limit_problems,
            *geometry_problems,
            *(problem for outcome in outcomes.values() for problem in outcome.problems),
            *snapshot_problems,
            *visible_range_problems(descriptor, snapshot.record if snapshot else None),
        ],
        key=_problem_order,
    )
    reasons = _reasons(descriptor, snapshot, geometry) if not refusals else ()
    selection = snapshot.selection if snapshot else None
    return Admission(
        path=given,
        packet_sha256=packet.sha256,
        metadata_sha256=metadata.sha256 if metadata else None,
        refusals=tuple(refusals),
        reasons=reasons,
        packet_json=parsed.value,
        packet_text=parsed.text,
        snapshot=snapshot_value,
        snapshot_text=_decoded_text(metadata.data if metadata else None),
        identity=descriptor.identity,
        selection=selection,
        sample=snapshot.sample if snapshot else None,
        geometry=geometry,
        tensors=_tensors(descriptor, outcomes) if geometry is not None else None,
        scale=snapshot.scale if snapshot else None,
        kernel_output_dtype=selection["kernelOutputDType"] if selection else None,
    )


class ReadAhead:
    """`admit(path)` on a thread of its own, started before numpy loads (explorer/launch.py)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._admission: Admission | None = None
        self._thread = threading.Thread(target=self._admit, name="explorer-read-ahead", daemon=True)
        self._thread.start()

    def _admit(self) -> None:
        with contextlib.suppress(Exception):  # admission never raises for content; the command admits again
            self._admission = admit(self.path)

    def admission_of(self, path: str) -> Admission | None:
        """The admission of `path` once it is done; None for another path or when admitting raised."""
        self._thread.join()
        return self._admission if path == self.path else None
