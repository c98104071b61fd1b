"""Code markup that changes nothing on screen is cut from the built pages (attnmarl.site.sphinxext): a Pygments token
class whose only style, in every theme, is the code box's own colour renders the same without its span."""
from attnmarl.site.sphinxext import plain_token_classes, unwrap_plain_tokens

CSS = """
html[data-theme="light"] .highlight { background: #fefefe; color: #080808 }
html[data-theme="light"] .highlight .n { color: #080808 }
html[data-theme="light"] .highlight .k { color: #7928A1 }
html[data-theme="light"] .highlight .p { color: #080808; font-weight: bold }
html[data-theme="light"] .highlight .w { color: #080808 }
html[data-theme="dark"] .highlight { background: #2b2b2b; color: #F8F8F2 }
html[data-theme="dark"] .highlight .n { color: #f8f8f2 }
html[data-theme="dark"] .highlight .k { color: #F8F8F2 }
html[data-theme="dark"] .highlight .p { color: #F8F8F2 }
"""


def test_only_classes_that_look_like_the_box_in_every_theme_are_plain():
    # k differs in the light theme, p is bold there, w has no dark rule (it would keep the light colour)
    assert plain_token_classes(CSS) == {"n"}


def test_plain_spans_give_way_to_their_text_and_the_rest_stay():
    page = '<pre><span class="k">def</span> <span class="n">f</span><span class="p">(</span><span class="n">x</span>'
    assert unwrap_plain_tokens(page, {"n"}) == '<pre><span class="k">def</span> f<span class="p">(</span>x'
    assert unwrap_plain_tokens(page, set()) == page
