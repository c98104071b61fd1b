"""The notebook glue: what shows the library in a chapter, and nothing a result depends on.

- :mod:`attnmarl.notebook.viz` -- heatmaps, arenas, learning curves and the frames the explorers draw;
- :mod:`attnmarl.notebook.svg` -- the same frames as SVG markup (the live face's renderer);
- :mod:`attnmarl.notebook.diagrams` -- the source's figures (17.1-17.8) as block-and-arrow SVG diagrams;
- :mod:`attnmarl.notebook.widgets` -- two-faced explorers: live ipywidgets in a kernel, kernel-free HTML in
  the built book (the scripts and styles of ``static/``);
- :mod:`attnmarl.notebook.playground` -- the trained teams playing in the page;
- :mod:`attnmarl.notebook.explorers` -- one module per chapter: the functions its explorers call.

The library the chapters teach (attention, networks, algorithms, environments, training, statistics) is
the package's root; the tools that only build the website are :mod:`attnmarl.site`.
"""
