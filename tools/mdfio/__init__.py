"""mdfio's Python side: fio's JSON of an mdfio run read into md-workbench's
figures (fiojson, figures), the tools that report and draw them (report,
plot), and, shared by bench/run and the tests, one way to write a jobfile
and run fio (fio), fresh file systems (filesystems), a memory limit
(cgroups), paired measurements (pairing) and result files (results)."""
VERSION = "mdfio-0.1.0"
