"""The rules of one-box Sokoban, in gym-sokoban's board codes.

Every other module (solver, symmetry, generator, verification, runtime) plays
through :class:`Board` so that there is exactly one definition of a legal move.

Codes, as in gym-sokoban and verl-agent:

``room_fixed``  0 wall, 1 floor, 2 target
``room_state``  0 wall, 1 floor, 2 target, 3 box on target, 4 box, 5 player
                (a player standing on a target is 5; the target shows in ``room_fixed``)

Actions are numbered as in verl-agent: 1 up, 2 down, 3 left, 4 right.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    return tuple(tuple(int(v) for v in row) for row in rows)


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
        return 0 <= r < self.height and 0 <= c < self.width and self.room_fixed[r][c] != WALL

    def move(self, action: int) -> tuple["Board", str]:
        """Apply one action; return the new board and ``"push"``, ``"walk"`` or ``"none"``.

        A push happens when the box is ahead and the cell beyond it is floor or
        target; otherwise the player walks onto a free floor or target cell;
        otherwise nothing changes.
        """
        dr, dc = DELTAS[action]
        ahead = (self.player[0] + dr, self.player[1] + dc)
        if ahead == self.box:
            beyond = (ahead[0] + dr, ahead[1] + dc)
            if self.is_open(beyond):
                return Board(self.room_fixed, ahead, beyond), "push"
            return self, "none"
        if self.is_open(ahead):
            return Board(self.room_fixed, ahead, self.box), "walk"
        return self, "none"

    def room_state(self) -> Grid:
        """The gym-sokoban ``room_state`` grid of this position."""
        rows = [list(row) for row in self.room_fixed]
        br, bc = self.box
        rows[br][bc] = BOX_ON_TARGET if self.room_fixed[br][bc] == TARGET else BOX
        rows[self.player[0]][self.player[1]] = PLAYER
        return as_grid(rows)

    def xsb(self) -> str:
        """XSB text: ``#`` wall, space floor, ``.`` goal, ``$`` box, ``*`` box on goal,
        ``@`` player, ``+`` player on goal; rows joined by ``\\n``."""
        lines = []
        for r, row in enumerate(self.room_fixed):
            chars = []
            for c, fixed in enumerate(row):
                if (r, c) == self.player:
                    chars.append("+" if fixed == TARGET else "@")
                elif (r, c) == self.box:
                    chars.append("*" if fixed == TARGET else "$")
                else:
                    chars.append(XSB_CHARS[fixed])
            lines.append("".join(chars))
        return "\n".join(lines)

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


def play(board: Board, actions: Sequence[int]) -> list[tuple[Board, str]]:
    """Apply ``actions`` in turn; the board after each one and what it did."""
    trace = []
    for action in actions:
        board, outcome = board.move(action)
        trace.append((board, outcome))
    return trace


def to_lurd(board: Board, actions: Sequence[int]) -> str:
    """LURD notation of a move sequence: lower case walks, upper case pushes."""
    letters = []
    for action, (_, outcome) in zip(actions, play(board, actions)):
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
