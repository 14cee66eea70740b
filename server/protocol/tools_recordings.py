"""transcribe_recording: a practice recording transcribed and measured
(server/services/recordings.py)."""

from typing import Annotated

from pydantic import Field

from server.protocol.results import RecordingResult
from server.protocol.toolkit import Reply, ToolKit
from server.services.recordings import recording_result


def register_recording_tool(kit: ToolKit) -> None:
    vault = kit.vault

    @kit.read_tool(title="Transcribe and measure a recording", output=RecordingResult)
    def transcribe_recording(
        path: Annotated[
            str, Field(description="audio file in the vault (wav, mp3, m4a, ogg, webm)")
        ],
        offset: Annotated[
            int, Field(ge=0, description="transcript char offset to continue from (see next)")
        ] = 0,
    ) -> Reply:
        """Transcribe a practice recording on the owner's machine and measure it: speaking
        rate (words/min; characters/min for Chinese), every pause with its times, long pauses
        (2 s or more by default), when the first sentence ends, filler words, and the
        transcript with timed segments. Use these numbers when you score a session instead of
        estimating them; write them into the session note with the write tools. The first call
        on a recording can take a while (about a tenth of its length); later ones are instant.
        Long transcripts are paged: `next` says how to get the rest."""
        return recording_result(vault, path, offset), [path]
