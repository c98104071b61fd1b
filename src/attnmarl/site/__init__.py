"""The tools that only build the HTML book, which a Colab reader never imports.

- :mod:`attnmarl.site.sphinxext` -- the Sphinx extension: static faces, formulas, code excerpts, assets;
- :mod:`attnmarl.site.mathsvg` -- formulas typeset at build time (MathJax under Node.js, ``typeset-math.js``);
- :mod:`attnmarl.site.codelines` -- the lines of the package an algorithm box shows under each step;
- :mod:`attnmarl.site.csspurge`, :mod:`attnmarl.site.iconfont`, :mod:`attnmarl.site.webp` -- stylesheets
  cut to the rules the book can match, icon fonts cut to the icons it shows, figures as lossless WebP.
"""
