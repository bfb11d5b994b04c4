"""Scenarios (DESIGN §3): the format (schema), loading and validation (loader), lookup by name.

Rules the loader enforces beyond the schema, so a run never starts on a broken file:
- ids (sessions, turns, facts) use letters, digits, `.`, `_`, `-` — never `/`, which marks
  an included scenario; turn ids are unique across the file, tool names too;
- seed turns carry a transcript ending in an assistant reply and an `expect` (use
  `unchanged: true` when nothing should be kept), and no `question`; eval turns carry a
  `question` and no transcript; only eval sessions carry `reference_memory` (<= 8,000 chars);
  any session may carry `initial_memory` (<= 8,000 chars, every skeleton section in order);
- references name known facts and tools; a fact's `until` names a turn at or after the turn
  that first records it, and no later turn records it again;
- patterns are non-empty, and `/.../` ones compile; tool responses are `when` + `result`
  (keys among the tool's parameters) or a single trailing `default`;
- combined files (`include`) need `order`, listing every session exactly once and keeping each
  scenario's sessions in their file order; includes resolve next to the file, then by name,
  and may nest but not cycle; no included session carries `initial_memory`. See combine.py
  for how ids are prefixed.
"""
