"""The book's files on disk: the checkpoint format (:mod:`attnmarl.files.checkpoint`), the seal that makes
a damaged file refused rather than half-read (:mod:`attnmarl.files.sealed`), and writes that an
interruption never leaves half done (:mod:`attnmarl.files.atomic`)."""
