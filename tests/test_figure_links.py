"""Links to the source's figures say what the figure shows (issue 43: a reader who does not follow "fig. 17.8" to
chapter 7 should still know what it is): attnmarl.site.sphinxext.describe_figure_links on a page's doctree."""
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from attnmarl.site.sphinxext import SOURCE_FIGURES, describe_figure_links


def paragraph(*parts):
    """A document of one paragraph: strings are text, (text, uri) pairs are links (uri None: within the page)."""
    document = new_document("page", get_default_settings(Parser))
    para = nodes.paragraph()
    for part in parts:
        if isinstance(part, str):
            para += nodes.Text(part)
        elif part[1] is None:  # a link within the page, as Sphinx resolves it: a refid
            para += nodes.reference(part[0], part[0], refid="fig-17-" + part[0].rsplit(".", 1)[1])
        else:
            para += nodes.reference(part[0], part[0], refuri=part[1])
    document += para
    describe_figure_links(document)
    return document


def test_the_first_link_to_a_figure_shown_elsewhere_carries_its_description_and_every_link_a_title():
    document = paragraph("As drawn in ", ("fig. 17.8", "07-value-network.html#fig-17-8"), ", the critic and ",
                         ("fig. 17.8", "07-value-network.html#fig-17-8"), " again.")
    text = document.astext()
    assert text == f"As drawn in fig. 17.8 ({SOURCE_FIGURES['17.8']}), the critic and fig. 17.8 again."
    titles = [link["reftitle"] for link in document.findall(nodes.reference)]
    assert titles == [f"Fig. 17.8: {SOURCE_FIGURES['17.8']}"] * 2


def test_a_link_that_closes_a_parenthesis_takes_its_description_after_a_comma():
    text = paragraph("(the source's ", ("fig. 17.2", "03-self-attention.html#fig-17-2"), "): every input").astext()
    assert text == f"(the source's fig. 17.2, {SOURCE_FIGURES['17.2']}): every input"


def test_a_link_to_a_figure_on_the_same_page_and_other_links_are_left_as_they_are():
    document = paragraph("See ", ("fig. 17.2", None), " and ", ("chapter 7", "07-value-network.html#ch7-sec1"))
    assert document.astext() == "See fig. 17.2 and chapter 7"
    links = list(document.findall(nodes.reference))
    assert links[0]["reftitle"].startswith("Fig. 17.2: ") and "reftitle" not in links[1]


def test_every_figure_the_book_draws_has_a_description():
    assert sorted(SOURCE_FIGURES, key=lambda n: int(n.split(".")[1])) == [f"17.{n}" for n in range(1, 10)]
