"""What every record model shares: strictness, the schema version, the upgrade hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

from ..errors import SchemaVersionError

__all__ = [
    "SCHEMA_VERSION",
    "FileModel",
    "RecordPart",
    "StreamRecord",
    "check_schema_version",
]

#: Version of the record protocol and run-directory layout. It covers the manifest,
#: ``task.json``, ``profile.json`` and the three record streams together. Bump it on any
#: incompatible change and give the models an upgrade step in their ``_upgrades``.
#: Version 2 renamed the manifest's ``measurement.n`` to ``n_rollouts``; nothing else changed.
#: Version 3 added the manifest's optional ``sequential`` design (issue 24); nothing else changed.
#: Version 4 (issue 19, reasoning models) added the thought apart from the answer: the
#: rollout's ``reasoning`` and ``usage.reasoning_tokens``, the judgement's thought health
#: fields and ``task.json``'s ``thinking`` delimiters (``"none"`` in an older run's
#: ``task.json``: its texts were graded whole). Lines of older runs read as they are.
SCHEMA_VERSION = 4


def check_schema_version(version: object, *, path: object, what: str = "record schema") -> None:
    """Refuse a schema version this rolleval cannot read (newer, or not 1 to
    :data:`SCHEMA_VERSION`), naming both."""
    if (
        not isinstance(version, int)
        or isinstance(version, bool)
        or not 1 <= version <= SCHEMA_VERSION
    ):
        raise SchemaVersionError(
            f"{what} version {version!r} is not readable by this rolleval "
            f"(reads version {SCHEMA_VERSION}); use the rolleval version that wrote it",
            path=path,
        )


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordPart(_Model):
    """A value nested inside a record (a chat message, token usage): strict and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class StreamRecord(_Model):
    """One line of a record stream (``prompts.jsonl``, ``rollouts.jsonl``, ``judgements.jsonl``).

    Lines carry no version of their own: the run's ``manifest.json`` ``schema_version``
    covers them. A reader of an older run passes that version as validation context
    (``model_validate(data, context={"schema_version": v})``) and :meth:`_upgrade_stream`
    refuses a newer one (lines of versions 1 to 3 read as they are: version 4 only added
    optional fields).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _upgrade_stream(cls, data: Any, info: ValidationInfo) -> Any:
        version = (info.context or {}).get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION and isinstance(data, dict):
            check_schema_version(version, path=None)
        return data


class FileModel(_Model):
    """A whole run file (manifest, task settings, profile, ...): versioned by its own field.

    Subclasses declare their version field first. :meth:`_upgrade` (``mode="before"``)
    refuses a version newer than this rolleval reads and rewrites older shapes into the
    current one; ``_upgrades`` maps a version to the step that lifts it by one. A version
    with no step is refused with ``stale_fix`` (a file too old to upgrade).
    """

    version_field: ClassVar[str] = "schema_version"
    current_version: ClassVar[int] = SCHEMA_VERSION
    kind: ClassVar[str] = "file"
    _upgrades: ClassVar[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {}
    stale_fix: ClassVar[str] = "use the rolleval version that wrote it"

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        version = data.get(cls.version_field, 1)
        if not isinstance(version, int) or isinstance(version, bool):
            return data  # the field's own type check reports it
        if version > cls.current_version or version < 1:
            writer = data.get("rolleval_version", "unknown")
            raise SchemaVersionError(
                f"{cls.kind} version {version!r} (written by rolleval {writer}) is not readable "
                f"by this rolleval, which reads version {cls.current_version}; use rolleval {writer}"
            )
        data = cls._normalise(dict(data))
        while version < cls.current_version:
            step = cls._upgrades.get(version)
            if step is None:
                writer = data.get("rolleval_version", "unknown")
                raise SchemaVersionError(
                    f"{cls.kind} version {version!r} (written by rolleval {writer}) is too old "
                    f"for this rolleval, which reads version {cls.current_version}; {cls.stale_fix}"
                )
            data = step(data)
            version += 1
            data[cls.version_field] = version
        return data

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Accept spellings that files of the current version may hold (default: none)."""
        return data
