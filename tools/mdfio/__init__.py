"""mdfio's Python side: fio's JSON of an mdfio run read into md-workbench's
figures (fiojson, figures), the tools that report and draw them (report,
plot), and one way to write a jobfile and run fio (fio), shared by bench/run
and the tests."""
VERSION = "mdfio-0.1.0"
