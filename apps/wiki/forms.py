"""The wiki pages' forms: input shape only; the path rules, limits and roles are the store's and
the services' to judge (they answer with the reason)."""

from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator
from django.utils.translation import gettext_lazy as _

from apps.wiki.converters import nfc

__all__ = ["DeleteForm", "EditForm", "NewPageForm", "PreviewForm", "RenameForm", "RestoreForm",
           "UploadForm", "normalize_page_path"]

MESSAGE_MAX = 200
_BLOB = RegexValidator(r"\A[0-9a-f]{40}\Z", "Not a blob id.")
_COMMIT = RegexValidator(r"\A[0-9a-f]{40}\Z", "Not a commit id.")


def normalize_page_path(text: str) -> str:
    """What a person typed as a page's name, as a path: in NFC, trimmed, no leading or trailing
    ``/``, ``.md`` added when missing (``ops/Runbook`` -> ``ops/Runbook.md``)."""
    path = "/".join(part.strip() for part in nfc(text).strip().strip("/").split("/"))
    return path if path.endswith(".md") or not path else f"{path}.md"


class _Message(forms.Form):
    message = forms.CharField(
        max_length=MESSAGE_MAX, required=False, strip=True, label=_("Describe the change"),
        widget=forms.TextInput(attrs={"placeholder": _("What changed (optional)")}))


class EditForm(_Message):
    """A save from the editor or the conflict screen: the text, and the blob (and commit) the
    editor started from; no blob means the page is new."""

    content = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    expected_blob = forms.CharField(required=False, validators=[_BLOB],
                                    widget=forms.HiddenInput)
    base_commit = forms.CharField(required=False, validators=[_COMMIT],
                                  widget=forms.HiddenInput)

    def clean_content(self) -> str:
        # Browsers send CRLF from a textarea; the page keeps the LF its other writers use.
        return self.cleaned_data["content"].replace("\r\n", "\n")


class PreviewForm(forms.Form):
    """The editor's text, rendered as the page at ``path`` would be."""

    content = forms.CharField(required=False, strip=False)
    path = forms.CharField(required=False, max_length=1000)


class NewPageForm(forms.Form):
    """The name of a page to create (``ops/Runbook`` or ``ops/Runbook.md``)."""

    path = forms.CharField(max_length=255, label=_("New page"),
                           widget=forms.TextInput(attrs={"placeholder": _("Folder/Page name")}))

    def clean_path(self) -> str:
        path = normalize_page_path(self.cleaned_data["path"])
        if not path:
            raise forms.ValidationError(_("Name the page."))
        return path


class RenameForm(_Message):
    to = forms.CharField(max_length=255, label=_("New name"))
    expected_blob = forms.CharField(validators=[_BLOB], widget=forms.HiddenInput)

    def clean_to(self) -> str:
        to = nfc(self.cleaned_data["to"].strip())
        return to if to.startswith("_files/") else normalize_page_path(to)


class DeleteForm(_Message):
    expected_blob = forms.CharField(validators=[_BLOB], widget=forms.HiddenInput)


class RestoreForm(_Message):
    rev = forms.CharField(validators=[_COMMIT], widget=forms.HiddenInput)


class UploadForm(forms.Form):
    """An attachment: the file, and the name to keep it under in ``_files/`` (default: the
    file's own name)."""

    file = forms.FileField(allow_empty_file=False, label=_("File"))
    name = forms.CharField(max_length=200, required=False, strip=True, label=_("Save as"),
                           widget=forms.TextInput(attrs={"placeholder": _("name.png (optional)")}))
