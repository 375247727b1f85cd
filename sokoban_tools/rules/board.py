"""The rules of one-box Sokoban, in gym-sokoban's board codes.

This module is the one definition of a legal move: :class:`Layout` derives a
room's steps from :data:`DELTAS` and :meth:`Board.is_open`, and
:meth:`Layout.moves` applies the walk/push rule on flat cell indices. Board
play (:meth:`Board.move`), the solver and the generator all move through it.

Codes, as in gym-sokoban and verl-agent:

``room_fixed``  0 wall, 1 floor, 2 target
``room_state``  0 wall, 1 floor, 2 target, 3 box on target, 4 box, 5 player
                (a player standing on a target is 5; the target shows in ``room_fixed``)

Actions are numbered as in verl-agent: 1 up, 2 down, 3 left, 4 right.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER = 0, 1, 2, 3, 4, 5

UP, DOWN, LEFT, RIGHT = 1, 2, 3, 4
ACTIONS = (UP, DOWN, LEFT, RIGHT)
ACTION_NAMES = {UP: "up", DOWN: "down", LEFT: "left", RIGHT: "right"}
DELTAS = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}
LURD_WALK = {UP: "u", DOWN: "d", LEFT: "l", RIGHT: "r"}

XSB_CHARS = {WALL: "#", FLOOR: " ", TARGET: ".", BOX_ON_TARGET: "*", BOX: "$"}

Grid = tuple[tuple[int, ...], ...]
Cell = tuple[int, int]


def as_grid(rows: Sequence[Sequence[int]]) -> Grid:
    """Any nested sequence of ints (lists, numpy rows) as an immutable grid."""
    return tuple(tuple(map(int, row)) for row in rows)


@dataclass(frozen=True)
class Board:
    """A board position: the fixed room plus the player's and the box's cells.

    ``room_fixed`` has exactly one target; ``player`` and ``box`` are (row, column)
    pairs on distinct non-wall cells.
    """

    room_fixed: Grid
    player: Cell
    box: Cell

    def invariant_error(self) -> str | None:
        """What makes this board impossible (``None`` if nothing does): a room
        that is not a rectangle of wall, floor and target codes with one target,
        or a player or box off the grid, on a wall, or on the same cell.

        Not run on every construction, which the solver does millions of times;
        whoever accepts a Board from outside (the runtime's ``reset``) calls it.
        """
        fixed = self.room_fixed
        if not fixed or not fixed[0] or any(len(row) != len(fixed[0]) for row in fixed):
            return "room_fixed is not a non-empty rectangle"
        if any(v not in (WALL, FLOOR, TARGET) for row in fixed for v in row):
            return "room_fixed has a code other than 0 wall, 1 floor, 2 target"
        targets = sum(v == TARGET for row in fixed for v in row)
        if targets != 1:
            return f"room_fixed has {targets} targets, expected one"
        for name, cell in (("player", self.player), ("box", self.box)):
            if not (isinstance(cell, tuple) and len(cell) == 2 and all(isinstance(v, int) for v in cell)):
                return f"the {name} cell {cell!r} is not a (row, column) pair of ints"
            if not self.is_open(cell):
                return f"the {name} at {cell} is off the {self.height}x{self.width} grid or on a wall"
        if self.player == self.box:
            return f"the player and the box share the cell {self.player}"
        return None

    @property
    def height(self) -> int:
        return len(self.room_fixed)

    @property
    def width(self) -> int:
        return len(self.room_fixed[0])

    @property
    def target(self) -> Cell:
        return next(
            (r, c)
            for r, row in enumerate(self.room_fixed)
            for c, v in enumerate(row)
            if v == TARGET
        )

    @property
    def is_solved(self) -> bool:
        return self.room_fixed[self.box[0]][self.box[1]] == TARGET

    def is_open(self, cell: Cell) -> bool:
        """Inside the room and not a wall."""
        r, c = cell
        fixed = self.room_fixed
        return 0 <= r < len(fixed) and 0 <= c < len(fixed[0]) and fixed[r][c] != WALL

    def move(self, action: int) -> tuple["Board", str]:
        """Apply one action; return the new board and ``"push"``, ``"walk"`` or ``"none"``.

        A push happens when the box is ahead and the cell beyond it is floor or
        target; otherwise the player walks onto a free floor or target cell;
        otherwise nothing changes.
        """
        if action not in DELTAS:
            raise ValueError(f"action {action!r} is not one of {ACTIONS}")
        room = layout(self.room_fixed)
        for moved, player, box, pushed in room.moves(room.cell(self.player), room.cell(self.box)):
            if moved == action:
                return Board(self.room_fixed, room.coords[player], room.coords[box]), "push" if pushed else "walk"
        return self, "none"

    def room_state(self) -> Grid:
        """The gym-sokoban ``room_state`` grid of this position."""
        rows = [list(row) for row in self.room_fixed]
        br, bc = self.box
        rows[br][bc] = BOX_ON_TARGET if self.room_fixed[br][bc] == TARGET else BOX
        rows[self.player[0]][self.player[1]] = PLAYER
        return tuple(map(tuple, rows))

    def xsb(self) -> str:
        """XSB text: ``#`` wall, space floor, ``.`` goal, ``$`` box, ``*`` box on goal,
        ``@`` player, ``+`` player on goal; rows joined by ``\\n``."""
        rows = [[XSB_CHARS[code] for code in row] for row in self.room_fixed]
        (pr, pc), (br, bc) = self.player, self.box
        rows[br][bc] = XSB_CHARS[BOX_ON_TARGET if self.room_fixed[br][bc] == TARGET else BOX]
        rows[pr][pc] = "+" if self.room_fixed[pr][pc] == TARGET else "@"
        return "\n".join(map("".join, rows))

    @classmethod
    def from_rooms(cls, room_fixed: Sequence[Sequence[int]], room_state: Sequence[Sequence[int]]) -> "Board":
        """Read a (``room_fixed``, ``room_state``) pair, refusing anything but a
        rectangular room with one target, one box and one player that agree."""
        fixed, state = as_grid(room_fixed), as_grid(room_state)
        if not fixed or any(len(row) != len(fixed[0]) for row in fixed):
            raise ValueError("room_fixed is not a non-empty rectangle")
        if len(state) != len(fixed) or any(len(a) != len(b) for a, b in zip(state, fixed)):
            raise ValueError("room_state and room_fixed differ in shape")
        players, boxes, targets = [], [], []
        for r, (frow, srow) in enumerate(zip(fixed, state)):
            for c, (f, s) in enumerate(zip(frow, srow)):
                if f not in (WALL, FLOOR, TARGET):
                    raise ValueError(f"room_fixed[{r}][{c}] = {f} is not 0, 1 or 2")
                if f == TARGET:
                    targets.append((r, c))
                if s == PLAYER:
                    players.append((r, c))
                elif s in (BOX, BOX_ON_TARGET):
                    boxes.append((r, c))
                    if (s == BOX_ON_TARGET) != (f == TARGET):
                        raise ValueError(f"room_state[{r}][{c}] = {s} disagrees with room_fixed {f}")
                elif s != f:
                    raise ValueError(f"room_state[{r}][{c}] = {s} disagrees with room_fixed {f}")
                if s != WALL and f == WALL:
                    raise ValueError(f"room_state[{r}][{c}] puts a piece on a wall")
        for name, found in (("player", players), ("box", boxes), ("target", targets)):
            if len(found) != 1:
                raise ValueError(f"expected one {name}, found {len(found)}")
        return cls(fixed, players[0], boxes[0])

    @classmethod
    def from_xsb(cls, text: str) -> "Board":
        """Parse XSB text (rows separated by ``\\n``, all of one width)."""
        lines = text.split("\n")
        codes = {"#": (WALL, WALL), " ": (FLOOR, FLOOR), ".": (TARGET, TARGET),
                 "$": (FLOOR, BOX), "*": (TARGET, BOX_ON_TARGET),
                 "@": (FLOOR, PLAYER), "+": (TARGET, PLAYER)}
        fixed, state = [], []
        for r, line in enumerate(lines):
            unknown = set(line) - set(codes)
            if unknown:
                raise ValueError(f"XSB row {r} has unknown characters {sorted(unknown)}")
            fixed.append([codes[ch][0] for ch in line])
            state.append([codes[ch][1] for ch in line])
        return cls.from_rooms(fixed, state)


@dataclass(frozen=True)
class Layout:
    """A room's cells as flat indices ``row * stride + column`` with every step
    precomputed, for the search loops that visit thousands of positions.

    ``stride`` is the width plus one spare column that is never open, so no
    step wraps round an edge. ``exits[cell]`` lists, in :data:`ACTIONS` order,
    ``(action, ahead, beyond, behind)`` for each action whose ``ahead`` cell is
    open; ``beyond`` (one further) is ``-1`` when it is not open, and
    ``behind`` is the cell on the other side of ``cell``, where the generator's
    reverse play pulls a box from.
    """

    stride: int
    exits: tuple[tuple[tuple[int, int, int, int], ...], ...]
    coords: tuple[Cell, ...]

    def cell(self, coords: Cell) -> int:
        return coords[0] * self.stride + coords[1]

    def moves(self, player: int, box: int) -> list[tuple[int, int, int, bool]]:
        """The legal moves, in :data:`ACTIONS` order, as ``(action, player, box,
        pushed)``: the player steps onto an open cell; if the box is there it
        is pushed one further, which must be open."""
        return [(action, ahead, box, False) if ahead != box else (action, ahead, beyond, True)
                for action, ahead, beyond, _ in self.exits[player] if ahead != box or beyond >= 0]


@lru_cache(maxsize=8192)
def layout(room_fixed: Grid) -> Layout:
    """The :class:`Layout` of a room. Only walls matter, and rooms repeat (the
    generator makes a few thousand shapes), so each shape is derived once."""
    return _layout_of_walls(tuple(tuple(FLOOR if code != WALL else WALL for code in row) for row in room_fixed))


@lru_cache(maxsize=4096)
def _layout_of_walls(walls: Grid) -> Layout:
    probe = Board(walls, (0, 0), (0, 0))
    stride = probe.width + 1
    coords = _flat_coords(probe.height, stride)
    # Board.is_open of every cell (the spare column is outside the room), with
    # two rows of closed cells before and after, so that a step or two off the
    # top or bottom edge reads as closed.
    margin = 2 * stride
    is_open = [False] * margin + [probe.is_open(rc) for rc in coords] + [False] * margin
    offsets = [(action, DELTAS[action][0] * stride + DELTAS[action][1]) for action in ACTIONS]
    exits = []
    for cell in range(len(coords)):
        found = []
        if is_open[margin + cell]:
            for action, step in offsets:
                if is_open[margin + cell + step]:
                    beyond = cell + 2 * step if is_open[margin + cell + 2 * step] else -1
                    found.append((action, cell + step, beyond, cell - step))
        exits.append(tuple(found))
    return Layout(stride, tuple(exits), coords)


@lru_cache(maxsize=None)
def _flat_coords(height: int, stride: int) -> tuple[Cell, ...]:
    """The (row, column) of every flat cell: the same for every room of a size."""
    return tuple(divmod(cell, stride) for cell in range(height * stride))


def forget_layouts() -> None:
    """Empty the layout caches, so that a timing starts as a fresh process does."""
    layout.cache_clear()
    _layout_of_walls.cache_clear()


def play(board: Board, actions: Sequence[int]) -> list[tuple[Board, str]]:
    """Apply ``actions`` in turn; the board after each one and what it did."""
    trace = []
    for action in actions:
        board, outcome = board.move(action)
        trace.append((board, outcome))
    return trace


def to_lurd(board: Board, actions: Sequence[int]) -> str:
    """LURD notation of a move sequence: lower case walks, upper case pushes."""
    return lurd_of(actions, play(board, actions))


def lurd_of(actions: Sequence[int], trace: list[tuple[Board, str]]) -> str:
    """:func:`to_lurd` of actions already played, ``trace`` being their :func:`play`."""
    letters = []
    for action, (_, outcome) in zip(actions, trace):
        if outcome == "none":
            raise ValueError(f"action {ACTION_NAMES[action]} does nothing in this position")
        letter = LURD_WALK[action]
        letters.append(letter.upper() if outcome == "push" else letter)
    return "".join(letters)


def from_lurd(lurd: str) -> list[int]:
    """Actions of a LURD string (case only records whether a move pushed)."""
    codes = {v: k for k, v in LURD_WALK.items()}
    try:
        return [codes[ch.lower()] for ch in lurd]
    except KeyError as err:
        raise ValueError(f"{lurd!r} is not LURD notation (only u, d, l, r in either case)") from err
