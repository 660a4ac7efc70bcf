from __future__ import annotations

from ninja import Schema


class CrowOut(Schema):
    name: str
    epithet: str
    strength: str
    backstory: str
    role: str
    status: str
    model: str
    task_types: list[str]
