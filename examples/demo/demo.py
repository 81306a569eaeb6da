"""demo.py — the Python example of `make demo` (scripts/demo.sh): a small program whose flame
graph shows Python functions (parse, transform, checksum and the generator tokens) between the
interpreter's C frames, without any change to the program.
usage: python3 demo.py [SECONDS]"""
import sys
import time
import zlib


def tokens(text):
    for word in text.split():
        yield word.lower()


def parse(text):
    return [t for t in tokens(text) if t.isalpha()]


def transform(words):
    return sorted(set(w[::-1] for w in words))


def checksum(words):
    return zlib.crc32(" ".join(words).encode() * 20)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    text = "The quick brown fox jumps over the lazy dog and 42 other things " * 400
    end, rounds, total = time.monotonic() + seconds, 0, 0
    while time.monotonic() < end:
        total ^= checksum(transform(parse(text)))
        rounds += 1
    print("demo.py: %d rounds, checksum %08x" % (rounds, total))


if __name__ == "__main__":
    main()
