"""What a copy of a running guest must redo in each Python process (module
`cellvm_reseed`, embedded in the executor; docs/SNAPSHOTS.md).

Every guest restored from one snapshot holds the same processes with the same
memory. The kernel's CRNG is reseeded by NEW_GENERATION (or the vmgenid
driver), so whatever reads the kernel at each use is fresh by itself:
os.urandom, secrets, random.SystemRandom, uuid.uuid4, numpy's default_rng(),
tempfile.mkstemp's O_EXCL retry. What a process seeded once and keeps in its
memory is not. The agent numbers these events (the epoch, docs/PROTOCOL.md
section 8); a process that sees an epoch other than its own reseeds, before it
runs any more user code:

- random's global generator (random.random, choice, shuffle, uuid1's clock
  sequence fallback, email's boundaries, ...);
- numpy's legacy global RandomState (np.random.rand, pandas' sample), if
  numpy is loaded;
- tempfile's cached name sequence (names of NamedTemporaryFile, mkdtemp...);
- OpenSSL's generator inside the process (ssl.RAND_add reseeds its primary
  DRBG from the kernel), if the ssl module is loaded.

What cannot change in a live interpreter (str hashes' seed, generators a
program made itself, ...) is listed in docs/SNAPSHOTS.md.
"""

import os
import struct
import sys

# The words of MT19937's state (numpy's RK_STATE_LEN).
MT19937_WORDS = 624

# The epoch this process's state belongs to; None until the first one it is
# told: a process that cannot know (a spare forked before a snapshot) reseeds.
epoch = None
# The epochs at which this process image reseeded (inherited through fork, as
# everything else): what the tests look at.
reseeded_at = []


def reseed():
        """Draws new seeds from the kernel for everything listed above."""
        import random
        random.seed()
        np = sys.modules.get("numpy")
        if np is not None:
                try:
                        # A whole MT19937 key from the kernel, as a list: set_state copies it
                        # word by word and drops a kept gauss. seed(array) checks its array
                        # with ufuncs, numpy code that a clone's first cell translates
                        # afresh under TCG (~2,000 blocks); seed() with no argument goes
                        # through SeedSequence, ten times slower.
                        key = list(struct.unpack(f"{MT19937_WORDS}I", os.urandom(4 * MT19937_WORDS)))
                        np.random.set_state(("MT19937", key, MT19937_WORDS, 0, 0.0))
                except Exception:  # noqa: BLE001 - a broken numpy must not stop the cell
                        pass
        tempfile = sys.modules.get("tempfile")
        if tempfile is not None:
                tempfile._name_sequence = None  # made anew, from a fresh Random, on first use
        ssl = sys.modules.get("_ssl")
        if ssl is not None:
                try:
                        ssl.RAND_add(os.urandom(32), 32.0)
                except Exception:  # noqa: BLE001
                        pass


def enter_epoch(new):
        """Makes `new` this process's epoch, reseeding first if it had another.
        Returns whether it reseeded."""
        global epoch
        if new == epoch:
                return False
        reseed()
        reseeded_at.append(new)
        epoch = new
        return True


def before_cell(body):
        """An X_EXECUTE's body: reseeds if it carries an epoch this process has
        not seen. Returns whether it reseeded."""
        new = body.get("epoch") if isinstance(body, dict) else None
        return isinstance(new, int) and enter_epoch(new)


def sample():
        """Values that must differ between copies of one snapshot in their first
        cell (issue 11's list), for tests across clones: random.random(),
        numpy.random.rand() (None without numpy), os.urandom(16) and
        uuid.uuid4(), as text. Consumes from each generator."""
        import random
        import uuid
        try:
                import numpy as np
        except ImportError:
                np = None
        return {
                "random": repr(random.random()),
                "numpy": repr(float(np.random.rand())) if np is not None else None,
                "urandom": os.urandom(16).hex(),
                "uuid4": str(uuid.uuid4()),
        }
