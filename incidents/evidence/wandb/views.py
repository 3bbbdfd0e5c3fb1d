"""Views of the SDK's record messages that let protobuf list a row's keys and values without Python per item.

Reading a history item through the SDK's classes costs a Python wrapper and two attribute lookups
per item, which is most of the time a million-step run takes to read. The views below are the
SDK's own message definitions (copied from ``wandb_internal.proto``'s descriptors at import, so
field numbers always match the installed SDK) with two changes protobuf allows:

* a message-typed field becomes ``bytes`` (its encoding is the same), so a record's kind is known
  and its body is handed on without decoding what is not read (``RecordView``, ``HistoryView``,
  ``SummaryView``);
* every field of ``HistoryItem`` becomes ``repeated`` (``FlatItems``). Protobuf parses concatenated
  messages as one message with their repeated fields concatenated in order, so the items of a row,
  joined, parse into one list of keys and one list of values, decoded in C.

Between items we join a separator (a ``FlatItems`` holding one NUL key part, encoded by
protobuf), so the key list shows where each item began: :func:`flat_items` accepts a row only when
every item has exactly one key part and one JSON value and nothing else, and returns None for any
other shape (nested keys, old ``key`` items, typed values, an empty value), which the caller then
reads with the SDK's classes. (Values need no separator: with one key per item, one value per
item is what their count says, as no protobuf writer puts a singular field twice in one item.)
Nothing here reads bytes by hand: every byte is decoded by protobuf.

:func:`fold_plain_row` and :func:`fold_plain_update` read a plain history row or summary update
through the views; the reader (``records.py``) takes every other record with the SDK's classes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import repeat
from operator import setitem
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from wandb.proto import wandb_internal_pb2 as pb

from incidents.evidence.wandb.columns import Columns

_Field = descriptor_pb2.FieldDescriptorProto


def _bodies_as_bytes(source: Descriptor, name: str) -> descriptor_pb2.DescriptorProto:
    """``source`` with every message-typed field declared ``bytes`` (same encoding, not decoded)."""
    proto = descriptor_pb2.DescriptorProto()
    source.CopyToProto(proto)
    proto.name = name
    proto.ClearField("nested_type")
    proto.ClearField("enum_type")
    for field in proto.field:
        if field.type in (_Field.TYPE_MESSAGE, _Field.TYPE_GROUP, _Field.TYPE_ENUM):
            field.type = _Field.TYPE_BYTES if field.type != _Field.TYPE_ENUM else _Field.TYPE_INT32
            field.ClearField("type_name")
    return proto


def _all_repeated(source: Descriptor, name: str) -> descriptor_pb2.DescriptorProto:
    """``source`` with every field ``repeated`` and no oneofs: concatenated items list every value."""
    proto = _bodies_as_bytes(source, name)
    proto.ClearField("oneof_decl")
    for field in proto.field:
        field.label = _Field.LABEL_REPEATED
        field.ClearField("oneof_index")
        field.ClearField("proto3_optional")
    return proto


def _build() -> dict[str, Any]:
    """The view classes by name: made here from descriptors, so their fields are unknown to a type checker."""
    file = descriptor_pb2.FileDescriptorProto(name="hourtab/wandb_views.proto", package="hourtab.wandb_views",
                                              syntax="proto3")
    file.message_type.extend([
        _bodies_as_bytes(pb.Record.DESCRIPTOR, "RecordView"),
        _bodies_as_bytes(pb.HistoryRecord.DESCRIPTOR, "HistoryView"),
        _bodies_as_bytes(pb.SummaryRecord.DESCRIPTOR, "SummaryView"),
        _all_repeated(pb.HistoryItem.DESCRIPTOR, "FlatItems"),
    ])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    built = pool.FindFileByName(file.name)
    return {name: message_factory.GetMessageClass(built.message_types_by_name[name])
            for name in built.message_types_by_name}


_VIEWS = _build()
RecordView = _VIEWS["RecordView"]
HistoryView = _VIEWS["HistoryView"]
SummaryView = _VIEWS["SummaryView"]
FlatItems = _VIEWS["FlatItems"]

#: The SDK's class for each body a ``RecordView`` hands on (``history`` → ``HistoryRecord`` …,
#: ``_info`` → the ``_RecordInfo`` that records and their history and summary bodies carry).
BODY_CLASSES: dict[str, type[Message]] = {
    field.name: message_factory.GetMessageClass(field.message_type)
    for field in pb.Record.DESCRIPTOR.fields if field.message_type is not None
}

#: Record fields outside its kind (``control``, ``_info``), decoded only to check them.
RECORD_METADATA: tuple[str, ...] = tuple(
    field.name for field in pb.Record.DESCRIPTOR.fields if field.message_type is not None and field.containing_oneof is None
)

_MARK = "\0"
_SEPARATOR = FlatItems(nested_key=[_MARK]).SerializeToString()
_FLAT_FIELDS = ("nested_key", "value_json")


def flat_items(items: Sequence[bytes]) -> tuple[list[str], list[str]] | None:
    """The one key and the JSON value of each encoded item, in order; None unless every item has exactly those."""
    n = len(items)
    if not n:
        return [], []
    flat = FlatItems.FromString(_SEPARATOR.join(items))
    if len(flat.nested_key) != 2 * n - 1 or len(flat.value_json) != n:
        return None
    if [field.name for field, _ in flat.ListFields()] != list(_FLAT_FIELDS):
        return None                  # an old ``key`` or a typed value in some item
    parts = list(flat.nested_key)
    # Every separator sits between two items and no key part is one: one key part per item.
    if parts.count(_MARK) != n - 1 or parts[1::2].count(_MARK) != n - 1:
        return None
    return parts[::2], list(flat.value_json)


def fold_plain_row(cols: Columns, body: bytes) -> bool:
    """Write a history row of plain numeric metrics into ``cols``; False (nothing written) for any other row."""
    view = HistoryView.FromString(body)
    flat = flat_items(view.item)
    if flat is None:
        return False
    keys, texts = flat
    try:
        values = list(map(float, texts))
    except ValueError:
        return False                        # text, JSON or null among the values
    step = pb.HistoryStep.FromString(view.step).num
    if view._info:
        BODY_CLASSES["_info"].FromString(view._info)
    row = cols.new_row(step)
    try:
        deque(map(setitem, map(cols.current.__getitem__, keys), repeat(row), values), 0)
    except KeyError:                        # a metric not yet written in this block: write the row again
        for key, value in zip(keys, values, strict=True):
            if key == "_step":              # the row's step is ``view.step``; keep it out of the columns
                cols.ignore(key)
            else:
                cols.set(key, row, value)
    return True


def fold_plain_update(summary: dict, body: bytes) -> bool:
    """Apply a summary update of plain keys to ``summary``; False (nothing applied) for removals or nested keys."""
    view = SummaryView.FromString(body)
    if view.remove:
        return False
    flat = flat_items(view.update)
    if flat is None:
        return False
    if view._info:
        BODY_CLASSES["_info"].FromString(view._info)
    summary.update(zip(*flat, strict=True))
    return True
