#!/usr/bin/python3
"""Writes the seed corpus for fuzz_audio_decode: short WAV (PCM 8/16/24/32, float, u-law,
WAVE_FORMAT_EXTENSIBLE, 1-6 channels, 8-48 kHz), FLAC, Ogg Vorbis, Ogg Opus and MP3 clips written
by the system's libsndfile (through ctypes: the library omnic decodes with), plus truncated and
hand-made WAV headers. Each file is under 8 KB. Run from anywhere:
python3 tests/fuzz/make_audio_corpus.py"""
import ctypes
import ctypes.util
import math
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "audio_decode")

SF = ctypes.CDLL(ctypes.util.find_library("sndfile") or "libsndfile.so.1")


class SF_INFO(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int), ("channels", ctypes.c_int),
                ("format", ctypes.c_int), ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


SF.sf_open.restype = ctypes.c_void_p
SF.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(SF_INFO)]
SF.sf_writef_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64]
SF.sf_close.argtypes = [ctypes.c_void_p]
SFM_WRITE = 0x20
WAV, WAVEX, FLAC, OGG, MPEG = 0x010000, 0x130000, 0x170000, 0x200000, 0x230000
PCM_U8, PCM_16, PCM_24, PCM_32, FLOAT, ULAW = 0x0005, 0x0002, 0x0003, 0x0004, 0x0006, 0x0010
VORBIS, OPUS, MP3 = 0x0060, 0x0064, 0x0082


def write(name, fmt, rate, channels, frames):
    path = os.path.join(OUT, name)
    info = SF_INFO(0, rate, channels, fmt, 0, 0)
    f = SF.sf_open(path.encode(), SFM_WRITE, ctypes.byref(info))
    if not f:
        raise SystemExit(f"sf_open {name} failed")
    x = (ctypes.c_float * (frames * channels))()
    for i in range(frames):
        for c in range(channels):
            x[i * channels + c] = 0.5 * math.sin(2 * math.pi * 440 * (c + 1) * i / rate)
    SF.sf_writef_float(f, x, frames)
    SF.sf_close(f)
    return open(path, "rb").read()


def wav_header(channels, rate, data_bytes, bits=16):
    align = channels * bits // 8
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * align, align, bits) +
            b"data" + struct.pack("<I", data_bytes))


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        os.remove(os.path.join(OUT, old))
    write("pcm8.wav", WAV | PCM_U8, 8000, 1, 400)
    wav16 = write("pcm16.wav", WAV | PCM_16, 16000, 1, 800)
    write("pcm24_stereo.wav", WAV | PCM_24, 22050, 2, 300)
    write("pcm32.wav", WAV | PCM_32, 16000, 1, 300)
    write("float_6ch.wav", WAV | FLOAT, 48000, 6, 100)
    write("ulaw.wav", WAV | ULAW, 8000, 1, 800)
    write("wavex.wav", WAVEX | PCM_16, 44100, 2, 400)
    flac = write("pcm16.flac", FLAC | PCM_16, 16000, 1, 1600)
    write("pcm24_stereo.flac", FLAC | PCM_24, 48000, 2, 800)
    vorbis = write("vorbis.ogg", OGG | VORBIS, 16000, 1, 1600)
    write("opus.ogg", OGG | OPUS, 48000, 1, 1920)
    mp3 = write("mono.mp3", MPEG | MP3, 16000, 1, 2304)
    write("stereo.mp3", MPEG | MP3, 44100, 2, 1152)
    for name, data in [("pcm16_trunc.wav", wav16[:300]), ("pcm16_trunc.flac", flac[: len(flac) // 2]),
                       ("vorbis_trunc.ogg", vorbis[: len(vorbis) * 2 // 3]), ("mono_trunc.mp3", mp3[:500]),
                       ("hour.wav", wav_header(1, 16000, 2 * 16000 * 3600) + bytes(64)),
                       ("eight_ch.wav", wav_header(8, 16000, 64) + bytes(64)),
                       ("rate1.wav", wav_header(1, 1, 64) + bytes(64)),
                       ("empty.wav", wav_header(1, 16000, 0))]:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    big = [n for n in os.listdir(OUT) if os.path.getsize(os.path.join(OUT, n)) > 8192]
    if big:
        raise SystemExit(f"seed files over 8 KB: {big}")


if __name__ == "__main__":
    main()
