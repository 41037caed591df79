"""`gradaudit search`: hypothesis explores a scenario space and shrinks each kind of disagreement.

A space file describes ranges instead of values:

    search:
      name: selector-space
      selector: {dtype: [bool, int8, int32, uint8, uint32], value: {min: -300, max: 300}}
      cases: {min: 1, max: 6}
      shape: [[], [3], [2, 3]]

Every key holds a list of alternatives, a `{min, max}` range or one fixed value. Hypothesis draws
scenarios (a selector value is drawn inside its dtype's range, so values a dtype cannot hold are
never tried; combinations the loader rejects are skipped and counted), audits each one exactly as
`gradaudit run` would, and treats a scenario that is not consistent as a failure of the kind
given by its findings' fingerprints. Hypothesis then shrinks each kind separately (see `search`)
and the minimal scenario of each is written out as an ordinary scenario file.
"""

from gradaudit.search.drawing import scenario_strategy, scenario_text
from gradaudit.search.explore import InvalidDraw, confirm, search
from gradaudit.search.found_files import database_folder, foreign_files, write_found
from gradaudit.search.spaces import Axis, SearchSpace, Space, SpaceError, read_space

__all__ = [
    "Axis",
    "InvalidDraw",
    "SearchSpace",
    "Space",
    "SpaceError",
    "confirm",
    "database_folder",
    "foreign_files",
    "read_space",
    "scenario_strategy",
    "scenario_text",
    "search",
    "write_found",
]
